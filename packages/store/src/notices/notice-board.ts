/** Each write that changes something appends its shared event in the same step (one script). */
export interface NoticeBoard {
  /** Publishes notice `id` (O(1) writes). False when it is live already (nothing changes). */
  publish(id: number, ts: number): Promise<boolean>;
  /** Withdraws a live notice; false when there was none. */
  withdraw(id: number): Promise<boolean>;
  /** The highest id ever published, withdrawn ones included (0 before the first). */
  highestId(): Promise<number>;
  /** Live notices with an id above `seen`. */
  countAfter(seen: number): Promise<number>;
  /** Every live notice id, ascending (what a core holds in memory). */
  liveIds(): Promise<number[]>;
}

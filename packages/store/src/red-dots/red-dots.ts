/** Each write that changes something appends its shared event in the same step (one script). */
export interface RedDots {
  /** G(name) := ts (one write). */
  mark(name: string, ts: number): Promise<void>;
  /** Removes G(name); false when it was not set. */
  clear(name: string): Promise<boolean>;
  /** name → G(name) of every marked red dot. */
  all(): Promise<Record<string, number>>;
}

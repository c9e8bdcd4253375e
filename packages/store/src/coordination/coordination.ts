import type { NodeInfo, SweepReport } from '@bubble/protocol';
/** Coordination of the cluster roles: the leader lease, live nodes, pool owners and fences, sweep ticks. */

export interface Assignment {
  /** Increases with every change of owners. */
  generation: number;
  /** owners[pool] = node id, or null while unassigned. */
  owners: (string | null)[];
}

export interface Coordination {
  /** Takes the leader lease if free or already ours, and extends it; true while we lead. */
  tryLead(node: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up if we hold it. */
  resign(node: string): Promise<void>;
  leader(): Promise<string | null>;

  /** Announces a node; it counts as live for `ttlMs` from the store's now. */
  heartbeat(node: NodeInfo, ttlMs: number): Promise<void>;
  /** Forgets a node at once (clean shutdown). */
  removeNode(node: string): Promise<void>;
  /** The nodes live at the store's now (forgetting the lapsed ones). */
  liveNodes(): Promise<NodeInfo[]>;

  /** Written only by the leader. */
  setAssignment(assignment: Assignment): Promise<void>;
  assignment(): Promise<Assignment | null>;

  /**
   * The pool's next fencing token: larger than every token issued for the pool before, also
   * after the store lost data (Redis: nextFence-2.lua). Only the latest is accepted by saveFenced.
   */
  nextFence(pool: number): Promise<number>;
  currentFence(pool: number): Promise<number>;

  /** Sweep triggers from the leader; handlers run for every tick published after subscribing. */
  publishTick(seq: number): Promise<void>;
  onTick(handler: (seq: number) => void): Promise<() => Promise<void>>;

  reportSweep(report: SweepReport): Promise<void>;
  /** The latest report of each node. */
  sweepReports(): Promise<SweepReport[]>;
}

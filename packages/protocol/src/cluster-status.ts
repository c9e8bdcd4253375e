/** GET /v1/cluster's answer (docs/api.md) and the records it is made of. */

/** A node of the cluster as its heartbeat announces it. */
export interface NodeInfo {
  id: string;
  role: 'server' | 'core' | 'gateway' | 'all';
  /** Where the node's HTTP endpoints answer, when it has any. */
  url?: string;
  startedAt: number;
  /** Last heartbeat, ms. */
  seenAt: number;
}

/** What a core reports of its latest sweep. */
export interface SweepReport {
  node: string;
  at: number;
  pools: number;
  users: number;
  changed: number;
  /** From the sweep's start until its changes were written and published. */
  durationMs: number;
  /** The reconciliation that ran after the write-back (not part of durationMs). */
  reconcileMs: number;
  redisCommands: number;
  staleWritesRejected: number;
  driftRepaired: number;
  /**
   * Held users whose feed waits for the platform's sources endpoint (their sources not held);
   * absent from cores of a version before it.
   */
  sourcesWaiting?: number;
}

/** One partition of the ingest stream, as GET /v1/cluster shows its backlog. */
export interface IngestBacklogView {
  partition: number;
  lag: number;
  pending: number;
  /** The oldest pending entry's age, ms; 0 with nothing pending. */
  oldestPendingMs: number;
  deadLetters: number;
}

/** The offline-delivery queue, as GET /v1/cluster shows it. */
export interface WebhookBacklogView {
  queued: number;
  oldestQueuedMs: number;
  retrying: number;
  deadLetters: number;
}

/** What GET /v1/cluster answers: the one shape its writer and its readers share. */
export interface ClusterStatus {
  leader: string | null;
  generation: number;
  pools: Array<{ pool: number; owner: string | null; online: number }>;
  nodes: NodeInfo[];
  /** The latest sweep report of each live core. */
  sweeps: SweepReport[];
  online: number;
  /** The ingest stream's backlog (gateways on Redis); absent or null where there is none. */
  ingest?: { partitions: IngestBacklogView[] } | null;
  /** The offline-delivery queue, with BUBBLE_WEBHOOK_URL set; absent or null without. */
  webhook?: WebhookBacklogView | null;
}

/** The parts of GET /v1/cluster the page reads. */
export interface ClusterStatus {
  leader: string | null;
  generation: number;
  online: number;
  pools: Array<{ pool: number; owner: string | null; online: number }>;
  nodes: Array<{ id: string; role: string; url?: string; startedAt: number; seenAt: number }>;
  sweeps: Array<{
    node: string;
    at: number;
    durationMs: number;
    pools: number;
    users: number;
    changed: number;
    redisCommands: number;
    staleWritesRejected: number;
    driftRepaired: number;
  }>;
  /** Gateways on Redis: the ingest stream's backlog per partition. */
  ingest?: {
    partitions: Array<{
      partition: number;
      lag: number;
      pending: number;
      oldestPendingMs: number;
      deadLetters: number;
    }>;
  } | null;
  /** With BUBBLE_WEBHOOK_URL: the offline-delivery queue (null or absent without). */
  webhook?: {
    queued: number;
    oldestQueuedMs: number;
    retrying: number;
    deadLetters: number;
  } | null;
}

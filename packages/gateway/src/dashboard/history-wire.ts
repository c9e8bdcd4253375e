/**
 * The shape of GET /v1/cluster/history, shared by the gateway that samples it and the dashboard's
 * browser code that draws it. Types only: nothing here may import anything.
 */

/** One core's sweeps in one interval. */
export interface CoreFigures {
  /** The longest sweep it reported in the interval; null if it reported none. */
  sweepMs: number | null;
  changedPerSecond: number;
}

/** One gateway's figures, from the heartbeat it last wrote. */
export interface GatewayFigures {
  connections: number;
  /** Badges pushed to sockets per second; null until two heartbeats are known. */
  pushesPerSecond: number | null;
}

/** What this process (the one serving the dashboard) knows of itself. */
export interface LocalFigures {
  connections: number | null;
  pushesPerSecond: number | null;
  postsPerSecond: number | null;
  pushBacklog: number | null;
}

export interface HistorySample {
  /** The end of the interval this sample covers, ms since the epoch. */
  at: number;
  /** Users the live cores hold (the online users of owned pools), from their latest sweeps. */
  online: number | null;
  /** Sweep reports seen in the interval, all cores together. */
  sweeps: number;
  /** Over the sweeps of the interval, all cores together; null when there were none. */
  sweepP50Ms: number | null;
  sweepP99Ms: number | null;
  changedPerSecond: number;
  /** Counts in the interval. */
  staleWritesRefused: number;
  driftRepaired: number;
  cores: Record<string, CoreFigures>;
  gateways: Record<string, GatewayFigures>;
  local: LocalFigures;
}

export interface HistoryResponse {
  intervalMs: number;
  capacity: number;
  samples: HistorySample[];
}

import type { DriverHandle } from './driver-process.js';
import type { ScenarioWorkloadOptions } from './workload.js';
import { WS_CEILING_DEFAULTS } from './ws-ceiling.js';

export interface LatencyOptions extends ScenarioWorkloadOptions {
  pools: number;
  /** BUBBLE_TICK of the server and core children, ms. */
  tickMs: number;
  postsPerSec: number;
  /** Ingest calls per second (the posts of a second are split over them). */
  callsPerSec: number;
  warmupSeconds: number;
  seconds: number;
  /** Time allowed after the last measured call for its pushes to arrive. */
  drainSeconds: number;
  /** Driver processes the clients are spread over. */
  drivers: number;
  /** Clients per local source address (the gateway limits new connections per address). */
  perAddress: number;
  connectConcurrency: number;
  connectSeconds: number;
  /** Who posts (WorkloadOptions.activity); `popularity` is the figure of the table. */
  activity: 'popularity' | 'independent';
  /** Write CPU profiles of the gateway, core and server children here. */
  profileDir: string | undefined;
  /** The bare `ws` ceiling measured after the bubble phase, with the same drivers. */
  ceilingWarmupSeconds: number;
  ceilingSeconds: number;
  /** Off for push-peers, which measures bare `ws` its own way. */
  ceiling: boolean;
  /** ws-driver processes of the caller's to use (and leave running) instead of forking new ones. */
  sharedDrivers: DriverHandle[] | undefined;
}

export const LATENCY_DEFAULTS: LatencyOptions = {
  users: 10_000,
  authors: 50_000,
  windowPosts: 200_000,
  followMedian: 150,
  followCap: 2000,
  pools: 100,
  tickMs: 100,
  postsPerSec: 1000,
  callsPerSec: 10,
  warmupSeconds: 10,
  seconds: 60,
  drainSeconds: 10,
  drivers: 2,
  perAddress: 40,
  connectConcurrency: 100,
  // Opening 10k sockets takes minutes on a loaded 2-core machine.
  connectSeconds: 480,
  seed: 11,
  activity: 'popularity',
  profileDir: undefined,
  ceilingWarmupSeconds: WS_CEILING_DEFAULTS.warmupSeconds,
  ceilingSeconds: WS_CEILING_DEFAULTS.seconds,
  ceiling: true,
  sharedDrivers: undefined,
  log: () => {},
};

/** bench.md "latency-moderate": who posts is drawn independently of who is followed. */
export const LATENCY_MODERATE_DEFAULTS: LatencyOptions = {
  ...LATENCY_DEFAULTS,
  activity: 'independent',
};

export { benchCompute, COMPUTE_DEFAULTS, type ComputeOptions } from './compute.js';
export { benchColdStart, COLD_START_DEFAULTS, type ColdStartOptions } from './cold-start.js';
export { benchFanout, FANOUT_DEFAULTS, type FanoutOptions } from './fanout.js';
export { benchSweep, SWEEP_DEFAULTS, type SweepOptions } from './sweep.js';
export { buildWorkload, postBatch, seededRandom, ZipfSampler, percentile } from './workload.js';

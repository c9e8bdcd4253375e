export { benchCompute, COMPUTE_DEFAULTS, type ComputeOptions } from './compute.js';
export { benchSweep, SWEEP_DEFAULTS, type SweepOptions } from './sweep.js';
export { buildWorkload, postBatch, seededRandom, ZipfSampler, percentile } from './workload.js';

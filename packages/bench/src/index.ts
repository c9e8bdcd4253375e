export { benchCompute, COMPUTE_DEFAULTS, type ComputeOptions } from './compute.js';
export { buildWorkload, postBatch, seededRandom, ZipfSampler, percentile } from './workload.js';

export * from './errors.js';
export * from './ids.js';
export * from './time.js';
export * from './badge.js';
export * from './schemas.js';
export * from './pool-hash.js';
export * from './random.js';
export * from './close-codes.js';

export { FeedCounter, type TopicWindowPost, type WindowPost } from './feed-counter.js';
export { InternTable, idHash } from './intern-table.js';
export { CoreNode, type CoreNodeOptions } from './core-node.js';
export { PoolTenures, type PoolTenure, type PoolTenuresOptions } from './pool-tenures.js';
export { CoreMetrics } from './core-metrics.js';
export { ExtrasTracker } from './extras-tracker.js';
export { StoredBeliefs } from './stored-beliefs.js';

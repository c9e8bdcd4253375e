export { FeedCounter, type TopicWindowPost } from './feed-counter.js';
export { CoreNode, type CoreNodeOptions } from './core-node.js';
export { PoolTenures } from './pool-tenures.js';
export { CoreMetrics } from './core-metrics.js';
export { ExtrasTracker } from './extras-tracker.js';
export { StoredBeliefs } from './stored-beliefs.js';

export { SchedulerNode, type SchedulerNodeOptions } from './scheduler-node.js';
export { assignPools } from './pool-assigner.js';
export { tickPeriodMs } from './ticker.js';
export { readClusterStatus } from './cluster-status.js';

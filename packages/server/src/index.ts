export { SchedulerNode, type SchedulerNodeOptions } from './scheduler-node.js';
export { assignPools, samePlan } from './pool-assigner.js';
export { parseTick, startTicker, tickPeriodMs } from './ticker.js';
export { readClusterStatus } from './cluster-status.js';

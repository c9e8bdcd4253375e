export {
  BadgeService,
  DEFAULT_RULES,
  type BadgeRules,
  type BadgeExplanation,
  type ConversationListItem,
} from './badge-service.js';
export * from './badge-fields.js';
export { FeedCounter, type WindowPost } from './feed-counter.js';
export { InternTable, idHash } from './intern-table.js';
export { CoreNode, type CoreNodeOptions } from './core-node.js';
export { CoreMetrics } from './core-metrics.js';

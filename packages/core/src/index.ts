export { BadgeService, DEFAULT_RULES, type BadgeRules } from './badge-service.js';
export { FeedCounter, type WindowPost } from './feed-counter.js';
export { InternTable, idHash } from './intern-table.js';

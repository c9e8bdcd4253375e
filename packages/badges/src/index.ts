export {
  BadgeService,
  DEFAULT_RULES,
  type BadgeRules,
  type BadgeExplanation,
  type ConversationListItem,
} from './badge-service.js';
export * from './badge-fields.js';
export { readStoredExtras } from './stored-extras.js';

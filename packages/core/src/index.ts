export { BadgeService, DEFAULT_RULES, type BadgeRules } from './badge-service.js';

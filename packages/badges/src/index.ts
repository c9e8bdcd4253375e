export {
  BadgeService,
  DEFAULT_SOURCES_TIMEOUT_MS,
  type BadgeServiceOptions,
} from './badge-service.js';
export { DEFAULT_RULES, type BadgeRules } from './rules.js';
export type { BadgeCallOptions, BadgeStateOf, ServedBadge } from './cold-start.js';
export {
  fetchAndInstall,
  inFlightMs,
  Rehydration,
  type InstalledInputs,
  type RehydratedInputs,
} from './rehydration.js';
export type { BadgeExplanation } from './explain.js';
export type { ConversationListItem, PlatformMessage } from './conversations.js';
export type { GatewayLink, MissedReason } from './gateway-link.js';
export type { OfflineJob, OfflineJobs } from './offline-jobs.js';
export { countNoticesAfter, shownReddots } from './source-counts.js';
export { readStoredExtras, type CounterScope } from './stored-extras.js';
export {
  PLATFORM_OP_NAMES,
  PLATFORM_OP_VERSIONS,
  parsePlatformOp,
  platformOpEntity,
  type ParsedPlatformOp,
  type PlatformOpName,
} from './platform-ops.js';

export {
  FEED_FIELD,
  NOTICES_FIELD,
  addExtraFields,
  decodeFields,
  encodeFields,
  extraFieldsOf,
} from './fields.js';
export type { BadgeFields, ExtraCounts } from './fields.js';
export { NO_COUNTS, decodeCounts, encodeCounts, sameCounts } from './counts.js';
export { epochCode, newEpoch } from './epoch.js';
export { decodeBadgeState, type StoredBadge } from './stored-state.js';
export {
  ChangeList,
  PublishedChanges,
  decodeChanges,
  readChanges,
  type BadgeChange,
  type BadgeChangeReader,
} from './change-readers.js';
export { FrameStem, isAscii, stemmedFrameText } from './frame.js';
export { isNewerBadge, isNewerState, type BadgeStamp } from './newer.js';

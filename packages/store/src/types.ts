/** Every interface and type of the store, one line per component (the package's barrel exports them). */
export type * from './bubble-store/bubble-store.js';
export type * from './badges/badge-states.js';
export type * from './change-log/change-log.js';
export type * from './conversations/conversations.js';
export type * from './coordination/coordination.js';
export type * from './counters/counters.js';
export type * from './cursors/read-cursors.js';
export type * from './fenced-badges/fenced-badges.js';
export type * from './follows/follow-graph.js';
export type * from './marks/user-marks.js';
export type * from './notices/notice-board.js';
export type * from './pool-locks/pool-locks.js';
export type * from './posts/post-index.js';
export type * from './presence/presence.js';
export type * from './red-dots/red-dots.js';

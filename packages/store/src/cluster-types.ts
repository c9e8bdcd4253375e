// badge-state.ts still reads these two from here; it moves to @bubble/protocol, and this file goes with it.
export type { BadgeChange, BadgeChangeReader } from './fenced-badges/fenced-badges.js';

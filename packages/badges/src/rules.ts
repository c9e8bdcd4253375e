/** The tunable rules of a badge (BUBBLE_LOOKBACK_DAYS, BUBBLE_FOLLOW_CAP, …). */
export interface BadgeRules {
  lookbackDays: number;
  followCap: number;
  /** Most topics one user may follow (BUBBLE_TOPIC_CAP). */
  topicCap: number;
  displayCap: number;
  inactiveDays: number;
  /** BUBBLE_COUNTER_KINDS: the interaction counters' kinds; another kind is a bad request. */
  counterKinds: readonly string[];
}

export const DEFAULT_RULES: Readonly<BadgeRules> = Object.freeze({
  lookbackDays: 7,
  followCap: 2000,
  topicCap: 200,
  displayCap: 99,
  inactiveDays: 30,
  counterKinds: Object.freeze(['mention', 'comment', 'like']),
});

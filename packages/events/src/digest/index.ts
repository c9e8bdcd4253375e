export {
  FEED_REASON,
  startFeedDigest,
  type DigestStats,
  type FeedDigest,
  type FeedDigestOptions,
} from './feed-digest.js';
export { DigestMetrics } from './digest-metrics.js';
export { DigestPass, type DigestClaim } from './digest-pass.js';
export { PostActivity } from './post-activity.js';

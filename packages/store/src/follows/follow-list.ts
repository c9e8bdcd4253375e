/**
 * A follow list as the Redis engine stores it (format v2, RedisKeys' header): the ids joined by
 * ','. The id grammar has no ',', so the split is exact.
 */
export function decodeFollowList(raw: string | null): string[] {
  return raw ? raw.split(',') : [];
}

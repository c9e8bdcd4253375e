import type { RedisClient, RedisKeys } from '@bubble/store';

/**
 * claimDigestPage-2: hands the calling process the next page of the current pass over the
 * users seen within the window, or tells it how long to wait. A pass takes a snapshot of its
 * bounds when it starts (sights in [start - window, start]: a user seen later is online or just
 * was, and waits for the next pass) and walks them in order of last sight with a cursor
 * (score, how many of that score already handed), so no user is handed twice in a pass, by
 * whichever process asks. Pages are paced: at time t at most total × (t - start) / interval
 * users plus one page are handed, spreading the pass over the interval whatever the number of
 * processes. The next pass starts one interval after this one (anchored, so lateness shows as
 * lag), or now when the last one is more than an interval overdue.
 *   KEYS[1] pass     HASH  start · total · taken · score · skip · done
 *   KEYS[2] lastseen ZSET  user → last sight (ms)
 *   ARGV[1] now · ARGV[2] interval (ms) · ARGV[3] window (ms) · ARGV[4] page size
 *   Returns { 1, lag, user… } a page, or { 0, wait, lag } nothing now (wait ms); lag (ms) how
 *   far the pass is behind its schedule: the oldest user not yet handed is past their interval
 *   by that much
 */
const CLAIM_DIGEST_PAGE_LUA = `
local pass, seen = KEYS[1], KEYS[2]
local now, interval, window, size =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local s = redis.call('HMGET', pass, 'start', 'total', 'taken', 'score', 'skip', 'done')
local start, total, taken, score, skip = tonumber(s[1]), tonumber(s[2]), tonumber(s[3]), tonumber(s[4]), tonumber(s[5])
local done = s[6] == '1'
if not start or (done and now >= start + interval) then
  if start and now < start + 2 * interval then
    start = start + interval
  else
    start = now
  end
  score = start - window
  total = redis.call('ZCOUNT', seen, score, start)
  taken, skip, done = 0, 0, false
  redis.call('HSET', pass, 'start', start, 'total', total, 'taken', 0, 'score', score, 'skip', 0, 'done', 0)
end
if done then
  return { 0, start + interval - now, 0 }
end
local allowed = 0
if total > 0 then allowed = total * math.min(1, (now - start) / interval) end
local lag = 0
if allowed > taken then lag = math.floor((allowed - taken) * interval / total) end
if taken >= allowed + size then
  return { 0, math.ceil((taken - size - allowed) * interval / total) + 1, 0 }
end
local page = redis.call('ZRANGEBYSCORE', seen, score, start, 'WITHSCORES', 'LIMIT', skip, size)
if #page == 0 then
  redis.call('HSET', pass, 'done', 1)
  return { 0, math.max(1, start + interval - now), lag }
end
local reply = { 1, lag }
for i = 1, #page, 2 do
  reply[#reply + 1] = page[i]
  local at = tonumber(page[i + 1])
  if at == score then
    skip = skip + 1
  else
    score, skip = at, 1
  end
end
redis.call('HSET', pass, 'taken', taken + #page / 2, 'score', string.format('%.17g', score), 'skip', skip)
return reply
`;

/** Versioned: a changed script gets a new name, so a running process never runs the old text. */
const COMMAND = 'bubbleClaimDigestPageV1';

type ClaimCommand = (
  pass: string,
  seen: string,
  ...args: number[]
) => Promise<Array<string | number>>;

export type DigestClaim =
  | { kind: 'page'; users: string[]; lagMs: number }
  | { kind: 'wait'; waitMs: number; lagMs: number };

/** The shared pass over the users seen within the window (claimDigestPage-2 above). */
export class DigestPass {
  private readonly claim: ClaimCommand;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    const commands = redis as unknown as Record<string, ClaimCommand | undefined>;
    if (!commands[COMMAND]) {
      redis.defineCommand(COMMAND, { numberOfKeys: 2, lua: CLAIM_DIGEST_PAGE_LUA });
    }
    this.claim = (commands[COMMAND] as ClaimCommand).bind(redis);
  }

  async next(
    now: number,
    intervalMs: number,
    windowMs: number,
    pageSize: number,
  ): Promise<DigestClaim> {
    const reply = await this.claim(
      this.keys.digestPass(),
      this.keys.lastSeen(),
      now,
      intervalMs,
      windowMs,
      pageSize,
    );
    if (Number(reply[0]) === 1) {
      return { kind: 'page', lagMs: Number(reply[1]), users: reply.slice(2).map(String) };
    }
    return { kind: 'wait', waitMs: Number(reply[1]), lagMs: Number(reply[2]) };
  }

  /**
   * How far the pass is behind its schedule now (ms): what lagSeconds reports, read without
   * taking a page (0 before the first pass).
   */
  async lagMs(now: number, intervalMs: number): Promise<number> {
    const [start, total, taken, done] = await this.redis.hmget(
      this.keys.digestPass(),
      'start',
      'total',
      'taken',
      'done',
    );
    if (start === null) return 0;
    const begun = Number(start);
    if (done === '1' || Number(total) === 0) return Math.max(0, now - begun - intervalMs);
    const due = begun + (Number(taken) * intervalMs) / Number(total);
    return Math.max(0, Math.min(now - due, now - begun));
  }
}

/**
 * `bubble bench soak` for 90 s (issue 19; docs/benchmarks.md "soak"; the long form is `bubble
 * bench soak`, 60 minutes): two per-minute curves, the second a half minute. Real SDK clients in
 * driver processes on `bubble server`, `bubble core` and `bubble gateway` children of their own
 * redis-server, posts every second and a fifth of the sockets reconnecting per minute. Asserted:
 * no error (no unexplained failed attempt, no failed post, no missing or wrong badge at the end,
 * no crash), presence exactly the users with a socket, and no process's RSS after the first
 * sixth above its first sixth's high-water mark by more than 25 %. Never a bound on time.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { benchSoak } from '../../packages/bench/src/soak.js';
import { buildOnce } from '../support/build.js';

describe('bench soak (90 s)', () => {
  beforeAll(() => buildOnce(), 300_000);

  it('holds: no errors, presence correct, RSS within 25 % of its first sixth', async () => {
    const figures = await benchSoak({
      minutes: 1.5,
      sockets: 1000,
      postsPerSecond: 50,
      authors: 200,
      drivers: 2,
      rssMargin: 0.25,
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(figures));
    expect(figures.errorDetail).toEqual({
      unexplainedAttempts: 0,
      postErrors: 0,
      wrongBadges: 0,
      crashed: [],
    });
    expect(figures.errors).toBe(0);
    expect(figures.presence.correct, JSON.stringify(figures.presence)).toBe(true);
    expect(figures.rssGrowthOk, JSON.stringify(figures.rss)).toBe(true);
    expect(figures.curves.length).toBeGreaterThanOrEqual(2);
    for (const minute of figures.curves) expect(minute.pushes).toBeGreaterThan(0);
  }, 600_000);
});

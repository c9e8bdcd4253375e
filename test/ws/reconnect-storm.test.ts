/**
 * The reconnect storm (issue 19; docs/security.md "Reconnect storm"), the short form of `bubble
 * bench storm`: real SDK clients (BubbleClient with its own spread and full-jitter backoff, in 2
 * driver processes; a process may hold 20,000 open files) on real processes — `bubble server`,
 * `bubble core` and gateways A and B on one redis-server. Every client knows both gateways
 * (`url: [A, B]`) and starts on A.
 *
 * 1. A drains (SIGTERM → its paced 1001s): the clients reconnect to B.
 * 2. A is started again on its port, then B is killed with SIGKILL: they reconnect to A.
 *
 * Each time: no other process crashes; attempts beyond what a gateway admits are answered 429
 * (the per-address limit) or 503 (the admission bound) before the upgrade, or closed 1013
 * before any badge; every client is back within 60 s; its badge equals the stored one once
 * posts stop (posts keep coming during the storm); reconnection attempts per second (the
 * clients' own clocks) stay within twice their mean. The clients come from distinct loopback
 * addresses (127.1.x.y, 10 each: all of 127/8 is loopback on Linux), so the per-address limit
 * keeps its defaults and sees what a fleet of distinct addresses would make it see.
 *
 * 2,000 clients here; `STORM_CLIENTS=10000` (or `bubble bench storm`) runs the full size.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { benchStorm, type StormFigures } from '../../packages/bench/src/storm.js';
import { buildOnce } from '../support/build.js';

const CLIENTS = Number(process.env.STORM_CLIENTS ?? 2_000);

describe(`reconnect storm: ${CLIENTS} SDK clients`, () => {
  beforeAll(() => buildOnce(), 300_000);

  it('after a drain and after a kill -9, every client is back with its stored badge within 60 s, excess attempts refused before upgrading', async () => {
    const figures = await benchStorm({
      clients: CLIENTS,
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(figures));
    // The verdicts are the bench's own (packages/bench/src/storm.ts), printed above with the
    // figures they come from.
    const check = (label: string, f: StormFigures) => {
      expect(f.dropped, `${label}: clients dropped`).toBeGreaterThan(0);
      expect(
        {
          recovered: f.recovered,
          spread: f.spread,
          refusedAtTheDoor: f.refusedAtTheDoor,
          wrongBadges: f.wrongBadges,
        },
        `${label}: ${JSON.stringify(f)}`,
      ).toEqual({ recovered: true, spread: true, refusedAtTheDoor: true, wrongBadges: 0 });
    };
    check('drain', figures.drain);
    check('kill', figures.kill);
    expect(figures.drainExitCode).toBe(0);
    expect(figures.killSignal).toBe('SIGKILL');
    expect(figures.crashed).toEqual([]);
    expect(figures.postErrors).toBe(0);
  }, 600_000);
});

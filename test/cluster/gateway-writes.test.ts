/**
 * Regression: a core remembers the feed count stored for each held user (FeedCounter
 * `reported`) and writes only when its count differs from that. Gateways write the same badge hash too, through BadgeService.badge()/read()
 * (POST /v1/badge/read, GET /v1/badge, GET /v1/users/{u}/badge, a user coming online). When such
 * a write lands between two sweeps and the core's count then comes back to the value it last
 * wrote, the core skips the write: the stored (and pushed) badge of an online user stays wrong
 * after the cluster is quiet, until the count changes again. Fixed by the core following its
 * pools' change channels and taking every published state as the stored one.
 *
 * Made deterministic by freezing the core (SIGSTOP, a few ms, far below its lease) while the
 * gateway calls run. Everything up to the race runs in beforeAll, so a broken setup fails the
 * file.
 */
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { Cluster } from './harness.js';

const T0 = Date.now();

describe('cluster: gateway badge writes between two sweeps', () => {
  let c: Cluster;
  let core: RoleProcess;

  beforeAll(async () => {
    await buildOnce();
    c = await Cluster.start({ label: 'gw' });
    const [, spawned] = await Promise.all([c.spawn('server'), c.spawn('core'), c.spawn('gateway')]);
    core = spawned!;
    await c.waitSettled([core], c.settleMs);
    // Two online users, each following one author with two posts: the core wrote 2 for each.
    for (const user of ['reader', 'poller']) {
      const author = `${user}-author`;
      await c.platformOk('PUT', `/v1/users/${user}/follows/${author}`, undefined, 204);
      const posts = [
        { author, id: 'p1', ts: T0 - 50_000 },
        { author, id: 'p2', ts: T0 - 40_000 },
      ];
      await c.platformOk('POST', '/v1/posts', { posts }, 202);
      await c.platformOk('POST', '/v1/presence', { user, online: true, ttlMs: 600_000 }, 204);
      await waitFor(async () => (await c.storedFeed(user)) === 2, { timeoutMs: 5_000 });
    }
    await c.waitSwept([core], Date.now());
  }, 300_000);

  afterAll(async () => {
    await c?.close();
  });

  it('a read, then a post: the stored badge ends at the definition (2)', async () => {
    core.signal('SIGSTOP');
    const read = await c.client('reader', 'POST', '/v1/badge/read', {
      scope: 'feed',
      upTo: T0 - 45_000,
    });
    await c.platformOk('POST', '/v1/posts', { author: 'reader-author', id: 'p3', ts: T0 }, 202);
    core.signal('SIGCONT');
    expect((read.body as { feed: number }).feed).toBe(1);
    await c.waitSwept([core], Date.now());
    const stored = await c.storedFeed('reader');
    console.log(`[gateway writes] read, then a post: stored ${stored}, definition 2`);
    expect(stored).toBe(2);
  });

  it('a cold GET, then a delete: the stored badge ends at the definition (2)', async () => {
    core.signal('SIGSTOP');
    await c.platformOk('POST', '/v1/posts', { author: 'poller-author', id: 'p3', ts: T0 }, 202);
    const polled = await c.platformOk('GET', '/v1/users/poller/badge', undefined, 200);
    await c.platformOk('DELETE', '/v1/posts/poller-author/p3', undefined, 204);
    core.signal('SIGCONT');
    expect((polled as { feed: number }).feed).toBe(3);
    await c.waitSwept([core], Date.now());
    const stored = await c.storedFeed('poller');
    console.log(`[gateway writes] cold GET, then a delete: stored ${stored}, definition 2`);
    expect(stored).toBe(2);
  });
});

/**
 * The feed on phones (docs/api.md): the feed digest counts the feed of offline users seen
 * within BUBBLE_DIGEST_DAYS and makes the changed ones due with reason "feed"; the delivery
 * workers send them to a real receiver. A real redis-server; times shrunk (interval of seconds).
 */
import { DAY_MS } from '@bubble/protocol';
import { startFeedDigest, type FeedDigest, type FeedDigestOptions } from '@bubble/events';
import { RedisStore } from '@bubble/store';
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { membersNamed, webhookTestFile, type Stack, type TestReceiver } from './webhook-support.js';

const file = webhookTestFile();

async function digestOf(
  stack: Stack,
  options: Partial<FeedDigestOptions> = {},
): Promise<FeedDigest> {
  const digest = await startFeedDigest(stack.store, {
    intervalMs: 1_500,
    days: 3,
    rate: 10_000,
    webhookMinIntervalMs: 300,
    queueMax: 100_000,
    ...options,
  });
  file.cleanups.push(() => digest.close());
  return digest;
}

/** Users who follow `author`, opened the app (a sight, their badge stored) and left. */
async function seenFollowers(stack: Stack, users: readonly string[], author: string) {
  await Promise.all(users.map((user) => stack.service.replaceFollows(user, [author])));
  await Promise.all(users.map((user) => stack.service.serveBadge(user, { seen: true })));
}

function feedDeliveries(receiver: TestReceiver, user: string) {
  return (receiver.deliveriesByUser().get(user) ?? []).filter(({ delivery }) =>
    delivery.reasons.includes('feed'),
  );
}

let postSeq = 0;
async function post(stack: Stack, author: string): Promise<void> {
  await stack.service.ingestPosts([{ author, id: `p${postSeq++}`, ts: stack.store.clock.now() }]);
}

describe('feed digest', () => {
  it('delivers the feed to a recently seen offline user, not to one seen before BUBBLE_DIGEST_DAYS', async () => {
    const stack = await file.stack(['feed']);
    const receiver = await file.receiver();
    await seenFollowers(stack, ['fresh', 'online'], 'writer');
    await stack.service.replaceFollows('stale', ['writer']);
    const { store } = stack;
    await store.marks.see('stale', store.clock.now() - 4 * DAY_MS, async () => 0);
    await stack.service.badges(['stale']);
    await stack.service.setPresence('online', true, 60_000);
    await file.workers(stack, receiver.url);
    const digest = await digestOf(stack);

    await post(stack, 'writer');
    await waitFor(() => feedDeliveries(receiver, 'fresh').length > 0, {
      timeoutMs: 10_000,
      message: 'the recently seen offline follower delivered',
    });
    const [delivered] = feedDeliveries(receiver, 'fresh');
    expect(delivered!.delivery.badge.feed).toBe(1);
    expect(delivered!.delivery.reasons).toEqual(['feed']);
    // Each pass hands only users seen within the window: `stale` never, `online` left out.
    const { users, online } = digest.stats();
    expect(users).toBeGreaterThanOrEqual(2);
    expect(online * 2).toBe(users);
    expect(receiver.deliveriesByUser().has('stale')).toBe(false);
    expect(receiver.deliveriesByUser().has('online')).toBe(false);
    expect(receiver.requests.every((r) => r.signatureValid)).toBe(true);
  }, 30_000);

  it('never delivers twice within the interval, and skips a user nothing new reached', async () => {
    const stack = await file.stack(['feed']);
    const receiver = await file.receiver();
    await seenFollowers(stack, ['reader'], 'busy');
    await seenFollowers(stack, ['quiet'], 'silent');
    await file.workers(stack, receiver.url);
    const intervalMs = 1_500;
    const digest = await digestOf(stack, { intervalMs });

    const started = Date.now();
    // A post every 100 ms: the feed changes far more often than the interval.
    await waitFor(
      async () => {
        await post(stack, 'busy');
        return feedDeliveries(receiver, 'reader').length >= 3;
      },
      { timeoutMs: 20_000, intervalMs: 100, message: 'three digest deliveries' },
    );
    const elapsed = Date.now() - started;
    const times = feedDeliveries(receiver, 'reader').map(({ at }) => at);
    // One count per pass, passes an interval apart: at most one delivery per interval begun.
    expect(times.length).toBeLessThanOrEqual(Math.floor(elapsed / intervalMs) + 1);
    for (let i = 1; i < times.length; i++) {
      expect(times[i]! - times[i - 1]!).toBeGreaterThan(intervalMs / 2);
    }
    // Each feed delivered is larger than the one before: only changes are delivered.
    const feeds = feedDeliveries(receiver, 'reader').map(({ delivery }) => delivery.badge.feed);
    expect(feeds).toEqual([...feeds].sort((a, b) => a - b));
    expect(new Set(feeds).size).toBe(feeds.length);
    // `quiet` follows an author who never posted: looked at every pass, never counted.
    expect(receiver.deliveriesByUser().has('quiet')).toBe(false);
    expect(digest.stats().skipped).toBeGreaterThanOrEqual(2);
  }, 30_000);

  it('keeps its rate under load, and the pass shows its lag', async () => {
    const stack = await file.stack(['feed']);
    const receiver = await file.receiver();
    const users = membersNamed('load', 300);
    await seenFollowers(stack, users, 'star');
    await file.workers(stack, receiver.url);
    await post(stack, 'star');
    const rate = 200;
    const pageSize = 10;
    const started = performance.now();
    const digest = await digestOf(stack, { rate, pageSize, intervalMs: 1_000 });
    let sawLag = false;
    let mostAhead = -Infinity;
    await waitFor(
      () => {
        const { users: looked, lagMs } = digest.stats();
        const seconds = (performance.now() - started) / 1000;
        mostAhead = Math.max(mostAhead, looked - (rate * seconds + pageSize));
        if (lagMs > 0) sawLag = true;
        return users.every((user) => feedDeliveries(receiver, user).length > 0);
      },
      { timeoutMs: 20_000, intervalMs: 50, message: 'every follower delivered' },
    );
    // Never ahead of the bound (plus the page in hand).
    expect(mostAhead).toBeLessThanOrEqual(0);
    // 300 users at 200 a second cannot fit an interval of 1 s: the pass falls behind.
    expect(sawLag).toBe(true);
  }, 30_000);

  it('shares a pass between two processes without handing a user twice', async () => {
    const stack = await file.stack(['feed']);
    const other = new RedisStore({
      url: file.redis.url,
      keyPrefix: stack.store.keys.prefix,
      pools: 100,
    });
    await other.syncClock();
    file.cleanups.push(() => other.close());
    const receiver = await file.receiver();
    const users = membersNamed('pair', 200);
    await seenFollowers(stack, users, 'poet');
    await file.workers(stack, receiver.url);
    await post(stack, 'poet');
    const options = { intervalMs: 3_000, pageSize: 10 };
    const first = await digestOf(stack, options);
    const second = await digestOf({ ...stack, store: other }, options);

    const pass = stack.store.keys.digestPass();
    await waitFor(async () => (await stack.store.redis.hget(pass, 'done')) === '1', {
      timeoutMs: 15_000,
      message: 'the first pass done',
    });
    const taken = Number(await stack.store.redis.hget(pass, 'taken'));
    expect(taken).toBe(200);
    expect(first.stats().users + second.stats().users).toBe(200);
    expect(first.stats().users).toBeGreaterThan(0);
    expect(second.stats().users).toBeGreaterThan(0);
    await waitFor(() => users.every((user) => feedDeliveries(receiver, user).length > 0), {
      timeoutMs: 10_000,
      message: 'every follower delivered',
    });
    // The one post, counted once: every delivery carries it.
    for (const user of users) {
      for (const { delivery } of feedDeliveries(receiver, user))
        expect(delivery.badge.feed).toBe(1);
    }
  }, 30_000);
});

/**
 * The SDK's polling fallback, against real processes (docs/protocol.md "Polling", the client's
 * README). A `bubble all` on a real redis-server serves HTTP; the SDK's socket URL (its `wsUrl`
 * option) names a port where nothing listens yet, so every WebSocket is refused by the OS. After
 * `pollAfterFailures` (3) refused sockets the SDK polls GET /v1/badge with If-None-Match, never
 * sooner than the X-Poll-Interval of the previous answer, and its badge follows the posts the
 * platform ingests. Then a real `bubble gateway` starts on that port: the SDK's background
 * retries reach it, polling stops, and the next post is pushed over the socket.
 */
import { BubbleClient } from '@bubble/client';
import { freePort, waitFor } from '@bubble/test-utils';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import {
  Deployment,
  essentials,
  etagOf,
  recordingFetch,
  recordingWebSocket,
  watch,
  type RequestRecord,
  type SocketRecord,
} from './processes.js';

/** Timer slack: a timer may fire a millisecond or so before Date.now() says it is due. */
const EARLY_MS = 25;

/**
 * docs/protocol.md "Polling", for the polls of one client: each answered 200 or 304 with
 * X-Poll-Interval; the first (nothing held yet) without If-None-Match, every later one with the
 * ETag of the last badge a 200 answer brought; 304 only for the current ETag, 200 only for
 * another; and none started before the interval the previous answer asked for had passed.
 */
function expectPolite(polls: RequestRecord[]): void {
  const answered = polls.filter((p) => p.status !== undefined);
  expect(answered.length, JSON.stringify(polls)).toBeGreaterThanOrEqual(2);
  let held: string | undefined;
  for (const [i, poll] of answered.entries()) {
    const where = `poll ${i}: ${JSON.stringify(poll)}`;
    expect([200, 304], where).toContain(poll.status);
    expect(poll.pollInterval, where).toMatch(/^[1-9]\d*$/);
    expect(poll.ifNoneMatch, where).toBe(held);
    expect(poll.etag, where).toMatch(/^"[^"]+\.\d+"$/);
    if (poll.status === 304) expect(poll.etag, where).toBe(poll.ifNoneMatch);
    else {
      expect(poll.etag, where).not.toBe(poll.ifNoneMatch);
      held = poll.etag!;
    }
  }
  for (let i = 1; i < polls.length; i++) {
    const before = polls[i - 1]!;
    if (before.answeredAt === undefined) continue; // a failed request: nothing was asked for
    const asked = Number(before.pollInterval) * 1000;
    const waited = polls[i]!.startedAt - before.answeredAt;
    expect(
      waited,
      `poll ${i} came ${waited} ms after an answer asking for ${asked} ms`,
    ).toBeGreaterThanOrEqual(asked - EARLY_MS);
  }
}

describe('SDK fallback: polling while WebSockets are refused, the socket once they are not', () => {
  let deployment: Deployment | undefined;
  let client: BubbleClient | undefined;

  beforeAll(() => buildOnce(), 300_000);

  afterEach(async () => {
    client?.close();
    client = undefined;
    await deployment?.close();
    deployment = undefined;
  });

  it('polls at X-Poll-Interval with If-None-Match and follows posts, then goes back to a socket and gets pushes', async (ctx) => {
    const d = (deployment = await Deployment.start());
    ctx.onTestFailed(() => console.error(d.describe()));
    const main = await d.spawn('all', { BUBBLE_POLL_INTERVAL_S: '1' });
    // Where the SDK's sockets go: nothing listens there until the end of the test.
    const socketPort = await freePort();
    await d.waitSweeping(main);
    const [user, author] = d.usersInOwnPools('fallback', 2) as [string, string];
    await d.follow(main, user, author);

    const sockets: SocketRecord[] = [];
    const requests: RequestRecord[] = [];
    const c = (client = new BubbleClient({
      url: main.url,
      wsUrl: `ws://127.0.0.1:${socketPort}/v1/ws`,
      token: await d.token(user),
      WebSocket: recordingWebSocket(sockets),
      fetch: recordingFetch(requests),
      backoffBaseMs: 100,
      backoffMaxMs: 1000,
      // The interval until the server sends one: far below its X-Poll-Interval (≥ 1 s), so a
      // client that ignored the header would be caught polling too soon.
      pollIntervalMs: 200,
    }));
    const seen = watch(c);
    const polls = () =>
      requests.filter((r) => r.method === 'GET' && r.url === `${main.url}/v1/badge`);
    c.start();

    // Three refused sockets, then polls: the first brings the badge, the next ones are 304s.
    await waitFor(() => polls().filter((p) => p.status !== undefined).length >= 3, {
      timeoutMs: 30_000,
      message: `no polling: states ${JSON.stringify(seen.states)}, sockets ${JSON.stringify(sockets)}, requests ${JSON.stringify(requests)}`,
    });
    expect(c.state).toBe('polling');
    const firstPoll = polls()[0]!;
    expect(sockets.filter((s) => s.createdAt <= firstPoll.startedAt).length).toBeGreaterThanOrEqual(
      3,
    );
    expect(sockets.filter((s) => s.openedAt !== undefined)).toEqual([]);
    expect(sockets.filter((s) => s.closeCode !== undefined && s.closeCode !== 1006)).toEqual([]);
    expect(c.badge).toMatchObject({ user, feed: 0 });
    expectPolite(polls());
    expect(polls().filter((p) => p.status === 304).length).toBeGreaterThanOrEqual(2);

    // A post reaches the polling client through a poll.
    await d.post(main, author, 'p1');
    await waitFor(() => c.badge?.feed === 1, {
      timeoutMs: 30_000,
      message: `the poller never saw the post: ${JSON.stringify(polls())}`,
    });
    expect(essentials(c.badge!)).toEqual(essentials(await d.badge(main, user)));
    expect(polls().some((p) => p.status === 200 && p.etag === etagOf(c.badge!))).toBe(true);
    expect(c.state).toBe('polling');

    // WebSockets become available: a real gateway on the port the SDK keeps retrying.
    const gateway = await d.spawn('gateway', { BUBBLE_POLL_INTERVAL_S: '1' }, socketPort);
    await waitFor(() => c.state === 'open', {
      timeoutMs: 30_000,
      message: `never back on a socket: ${JSON.stringify(sockets.slice(-5))}`,
    });
    const openedAt = seen.states.at(-1)!.at;
    expect(seen.states.map((s) => s.state)).toEqual(['connecting', 'polling', 'open']);
    expect(sockets.filter((s) => s.openedAt !== undefined).map((s) => s.url)).toEqual([
      gateway.wsUrl,
    ]);

    // The next post is pushed over the socket.
    await d.post(main, author, 'p2');
    await waitFor(() => c.badge?.feed === 2, {
      timeoutMs: 30_000,
      message: 'no push of the second post',
    });
    expect(essentials(c.badge!)).toEqual(essentials(await d.badge(main, user)));
    expect(seen.badges.at(-1)!.at).toBeGreaterThanOrEqual(openedAt);

    // Polling stopped with the socket: nothing polled within 2.5 poll intervals of it opening.
    const interval = Number(polls().findLast((p) => p.pollInterval)!.pollInterval) * 1000;
    await waitFor(() => Date.now() - openedAt >= 2.5 * interval, { timeoutMs: 10 * interval });
    expect(polls().filter((p) => p.startedAt > openedAt)).toEqual([]);
    expect(c.state).toBe('open');

    expectPolite(polls());
  }, 150_000);
});

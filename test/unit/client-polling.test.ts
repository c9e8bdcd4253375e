import { afterEach, describe, expect, it, vi } from 'vitest';
import { GOOD, next, record, TestTimers, until, useFakeGateway } from '../client/support.js';

const rig = useFakeGateway({
  // 0.3 keeps every backoff off the 1 000 ms poll interval: 300, 600, 1 200, …
  random: () => 0.3,
});
const { connect } = rig;

afterEach(() => {
  vi.unstubAllGlobals();
});

const polls = () => rig.gw.requests.filter((r) => r.method === 'GET' && r.path === '/v1/badge');

describe('BubbleClient polling', () => {
  it('polls after three refused upgrades, with If-None-Match, handling 304, at X-Poll-Interval; back to the socket when it accepts', async () => {
    const timers = new TestTimers(0.01);
    rig.gw.refuseUpgrades = Infinity;
    let fetches = 0; // counted as the client starts them: the server may not have seen the last yet
    const c = connect(timers, { fetch: (url, init) => (fetches++, fetch(url, init)) });
    const events = record(c);
    c.start();
    await next(c, 'state', (s) => s === 'polling');
    expect(rig.gw.upgrades).toBe(3);

    await until(() => polls().length >= 3, 'three polls');
    const [first, second, third] = polls();
    expect(first?.headers.authorization).toBe(`Bearer ${GOOD}`);
    expect(first?.headers['if-none-match']).toBeUndefined();
    expect(first?.status).toBe(200);
    expect(second?.headers['if-none-match']).toBe('"E1.1"');
    expect(second?.status).toBe(304);
    expect(third?.status).toBe(304);
    expect(events.badges.map((b) => b.version)).toEqual([1]);
    // Every poll after an answer waits the server's X-Poll-Interval (1 s).
    expect(timers.delays.filter((d) => d === 1_000).length).toBeGreaterThanOrEqual(2);

    // A change while polling arrives with the next poll.
    rig.gw.bump({ feed: 4 });
    await next(c, 'badge', (b) => b.version === 2);
    await until(() => polls().length >= 5, 'a poll after the change');
    expect(polls().at(-1)?.headers['if-none-match']).toBe('"E1.2"');

    // The socket keeps being retried in the background; once one authenticates, polling stops.
    rig.gw.refuseUpgrades = 0;
    await next(c, 'state', (s) => s === 'open');
    expect(events.states).toEqual(['connecting', 'polling', 'open']);
    const fetchesSoFar = fetches;
    expect(timers.pending).toBe(0); // no poll, reconnect or timeout timer left
    rig.gw.bump({ feed: 5 });
    await next(c, 'badge', (b) => b.version === 3);
    expect(fetches).toBe(fetchesSoFar);
    expect(events.errors).toEqual([]);
  });

  it('waits X-Poll-Interval in real time between polls', async () => {
    vi.stubGlobal('WebSocket', undefined);
    const c = connect(new TestTimers(1), { WebSocket: undefined, pollIntervalMs: 60_000 });
    c.start();
    expect(c.state).toBe('polling');
    await until(() => polls().length >= 3, 'three polls', 5_000);
    const [a, b, d] = polls().map((r) => r.at);
    expect(b! - a!).toBeGreaterThanOrEqual(990);
    expect(d! - b!).toBeGreaterThanOrEqual(990);
  });

  it('respects Retry-After on 503, and never polls faster than the interval', async () => {
    vi.stubGlobal('WebSocket', undefined);
    const timers = new TestTimers(0.01);
    rig.gw.pollOverrides.push({ status: 503, retryAfter: 3 }, { status: 503, retryAfter: 0 });
    const c = connect(timers, { WebSocket: undefined, pollIntervalMs: 2_000 });
    const events = record(c);
    c.start();
    await until(() => polls().length >= 4, 'four polls');
    // first at once; 503 → Retry-After 3 s; 503 without a usable Retry-After → the 2 s interval;
    // 200 with X-Poll-Interval 1 → 1 s.
    expect(timers.delays.slice(0, 4)).toEqual([0, 3_000, 2_000, 1_000]);
    expect(polls().map((r) => r.status)).toEqual([503, 503, 200, 304]);
    expect(events.errors.map((e) => [e.code, e.status, e.fatal])).toEqual([
      ['UB_ERR_UNAVAILABLE', 503, false],
      ['UB_ERR_UNAVAILABLE', 503, false],
    ]);
    expect(c.badge?.version).toBe(1);
  });

  it('retries a 401 once with a fresh token from getToken', async () => {
    vi.stubGlobal('WebSocket', undefined);
    const tokens = ['stale', GOOD];
    const getToken = vi.fn(async () => tokens.shift() ?? GOOD);
    const c = connect(new TestTimers(0.01), { WebSocket: undefined, token: undefined, getToken });
    const events = record(c);
    c.start();
    await next(c, 'badge');
    expect(polls().map((r) => [r.headers.authorization, r.status])).toEqual([
      ['Bearer stale', 401],
      [`Bearer ${GOOD}`, 200],
    ]);
    expect(events.errors).toEqual([]);
  });

  it('stops with auth-failed when a poll is refused and no other token comes', async () => {
    vi.stubGlobal('WebSocket', undefined);
    const timers = new TestTimers(0.01);
    const c = connect(timers, { WebSocket: undefined, token: 'bad' });
    c.start();
    expect(await next(c, 'error')).toMatchObject({ code: 'auth-failed', fatal: true, status: 401 });
    expect(c.state).toBe('closed');
    expect(timers.pending).toBe(0);
    expect(polls()).toHaveLength(1);
  });

  it('reports a failed poll and goes on', async () => {
    vi.stubGlobal('WebSocket', undefined);
    const timers = new TestTimers(0.01);
    let calls = 0;
    const c = connect(timers, {
      WebSocket: undefined,
      pollIntervalMs: 500,
      fetch: (url, init) =>
        ++calls === 1 ? Promise.reject(new Error('ECONNRESET')) : fetch(url, init),
    });
    const events = record(c);
    c.start();
    await next(c, 'badge');
    expect(events.errors.map((e) => [e.code, e.fatal])).toEqual([['network', false]]);
    expect(timers.delays.slice(0, 2)).toEqual([0, 500]);
  });
});

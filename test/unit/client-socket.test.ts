import { CLOSE } from '@bubble/protocol';
import { describe, expect, it, vi } from 'vitest';
import {
  drawing,
  GOOD,
  makeBadge,
  next,
  record,
  TestTimers,
  until,
  useFakeGateway,
} from '../client/support.js';

const rig = useFakeGateway();
const { connect } = rig;

describe('BubbleClient over a WebSocket', () => {
  it('authenticates with a first auth frame, no header and no token in the URL', async () => {
    const c = connect(new TestTimers(0.01));
    const events = record(c);
    c.start();
    const badge = await next(c, 'badge');
    expect(badge).toEqual(rig.gw.badge);
    expect(c.badge).toEqual(rig.gw.badge);
    expect(c.state).toBe('open');
    expect(events.states).toEqual(['connecting', 'open']);
    const [socket] = rig.gw.sockets;
    expect(socket?.url).toBe('/v1/ws');
    expect(socket?.headers.authorization).toBeUndefined();
    expect(socket?.frames[0]).toEqual({ type: 'auth', token: GOOD });
  });

  it('takes newer badges, ignores stale and repeated ones, and replaces on another epoch', async () => {
    const c = connect(new TestTimers(0.01));
    const events = record(c);
    c.start();
    await next(c, 'state', (s) => s === 'open');
    rig.gw.push(makeBadge('E1', 5));
    rig.gw.push(makeBadge('E1', 3)); // stale: lower version, same epoch
    rig.gw.push(makeBadge('E1', 5)); // repeated
    rig.gw.push(makeBadge('E1', 6));
    await next(c, 'badge', (b) => b.version === 6);
    expect(events.badges.map((b) => b.version)).toEqual([1, 5, 6]);

    rig.gw.push(makeBadge('E2', 1)); // another epoch replaces, whatever its version
    await next(c, 'badge', (b) => b.epoch === 'E2');
    rig.gw.push(makeBadge('E1', 9)); // the old epoch again is "another epoch" too
    rig.gw.push(makeBadge('E1', 8));
    rig.gw.push(makeBadge('E1', 10));
    await next(c, 'badge', (b) => b.version === 10);
    expect(events.badges.map((b) => `${b.epoch}.${b.version}`)).toEqual([
      'E1.1',
      'E1.5',
      'E1.6',
      'E2.1',
      'E1.9',
      'E1.10',
    ]);
    expect(c.badge).toMatchObject({ epoch: 'E1', version: 10 });
  });

  it('reconnects after drops with full-jitter exponential backoff, reset once a socket authenticates', async () => {
    const timers = new TestTimers(0.01);
    const draws = drawing(timers, [0.5, 0.25, 0.75, 0.999]);
    const c = connect(timers, { random: draws.random, pollAfterFailures: 100 });
    const events = record(c);
    c.start();
    await next(c, 'state', (s) => s === 'open');

    rig.gw.refuseUpgrades = 3;
    rig.gw.open[0]?.ws.terminate();
    await next(c, 'state', (s) => s === 'connecting');
    await next(c, 'state', (s) => s === 'open');
    expect(rig.gw.upgrades).toBe(5); // the first, three refused, the one that authenticated
    // A drop after authenticating: spread over reconnectSpreadMs (10 s). Then the backoff: 1 s,
    // 2 s, 4 s after 1, 2, 3 failures.
    expect(draws.backoffs()).toEqual([
      { value: 0.5, delay: 5000 },
      { value: 0.25, delay: 250 },
      { value: 0.75, delay: 1500 },
      { value: 0.999, delay: 3996 },
    ]);

    rig.gw.open[0]?.ws.terminate();
    await next(c, 'state', (s) => s === 'open');
    expect(draws.backoffs()[4]).toEqual({ value: 0.999, delay: 9990 }); // reset: the spread again
    expect(events.errors).toEqual([]);
    expect(events.states).toEqual([
      'connecting',
      'open',
      'connecting',
      'open',
      'connecting',
      'open',
    ]);
  });

  it('keeps every delay within [0, min(20 s, 0.5 s × 2^failures)] with a real random', async () => {
    const timers = new TestTimers(0.005);
    const draws = drawing(timers, Math.random);
    const c = connect(timers, { pollAfterFailures: 100, random: draws.random });
    rig.gw.refuseUpgrades = 8;
    c.start();
    await next(c, 'state', (s) => s === 'open', 10_000);
    const delays = draws.backoffs().map((d) => d.delay);
    expect(delays).toHaveLength(8);
    delays.forEach((delay, i) => {
      const bound = Math.min(20_000, 500 * 2 ** (i + 1));
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(bound);
    });
  });

  it('spreads the reconnection when a gateway drains (1001), and on 1013', async () => {
    const timers = new TestTimers(0.01);
    const draws = drawing(timers, [0.5, 0.5]);
    const c = connect(timers, { random: draws.random });
    c.start();
    await next(c, 'state', (s) => s === 'open');

    const delaysBefore = timers.delays.length;
    rig.gw.open[0]?.ws.close(CLOSE.goingAway);
    await next(c, 'state', (s) => s === 'connecting');
    await next(c, 'state', (s) => s === 'open');
    // Every client of the drained gateway got its 1001 at once: the first retry is spread.
    expect(timers.delays.slice(delaysBefore)).toEqual([5000, 600_000]); // reconnect, connect timeout

    rig.gw.open[0]?.ws.close(CLOSE.overloaded);
    await next(c, 'state', (s) => s === 'open');
    // A 1013 on the open socket is a lost open socket too: spread as well.
    expect(draws.backoffs()).toEqual([
      { value: 0.5, delay: 5000 },
      { value: 0.5, delay: 5000 },
    ]);
    expect(rig.gw.upgrades).toBe(3);
  });

  it('on 4401 asks getToken for a new token and retries with it', async () => {
    const getToken = vi.fn<() => Promise<string>>();
    getToken.mockResolvedValueOnce('expired').mockResolvedValue(GOOD);
    const c = connect(new TestTimers(0.01), { token: undefined, getToken });
    const events = record(c);
    c.start();
    await next(c, 'state', (s) => s === 'open');
    expect(getToken).toHaveBeenCalledTimes(2);
    expect(rig.gw.sockets.map((s) => s.frames[0])).toEqual([
      { type: 'auth', token: 'expired' },
      { type: 'auth', token: GOOD },
    ]);
    expect(rig.gw.sockets[0]?.closeCode).toBe(CLOSE.authFailed);
    expect(events.errors).toEqual([]);
  });

  it('after a 4401 on an authenticated socket (token expired), reconnects with a fresh token', async () => {
    rig.gw.tokens.add('second');
    const tokens = ['second'];
    const getToken = vi.fn(async () => tokens.shift() ?? 'none');
    const c = connect(new TestTimers(0.01), { getToken });
    c.start();
    await next(c, 'state', (s) => s === 'open');
    expect(getToken).not.toHaveBeenCalled(); // `token` covers the first connection
    rig.gw.open[0]?.ws.close(CLOSE.authFailed);
    await next(c, 'state', (s) => s === 'connecting');
    await next(c, 'state', (s) => s === 'open');
    expect(getToken).toHaveBeenCalledTimes(1);
    expect(rig.gw.sockets[1]?.frames[0]).toEqual({ type: 'auth', token: 'second' });
  });

  it('stops with auth-failed when the refused token comes back', async () => {
    const timers = new TestTimers(0.01);
    const getToken = vi.fn(async () => 'bad');
    const c = connect(timers, { token: undefined, getToken });
    const events = record(c);
    c.start();
    const error = await next(c, 'error');
    expect(error).toMatchObject({ code: 'auth-failed', fatal: true });
    expect(getToken).toHaveBeenCalledTimes(2);
    expect(rig.gw.upgrades).toBe(1); // the same token is not sent twice
    expect(c.state).toBe('closed');
    expect(events.states).toEqual(['connecting', 'closed']);
    expect(timers.pending).toBe(0);
  });

  it('stops with auth-failed at once for a refused static token', async () => {
    const timers = new TestTimers(0.01);
    const c = connect(timers, { token: 'bad' });
    c.start();
    expect(await next(c, 'error')).toMatchObject({ code: 'auth-failed', fatal: true });
    expect(rig.gw.upgrades).toBe(1);
    expect(timers.pending).toBe(0);
  });

  it.each([
    [CLOSE.forbidden, 'origin-refused'],
    [CLOSE.policy, 'policy-violation'],
    [CLOSE.tooLarge, 'frame-too-large'],
  ])('stops for good on %i (%s)', async (code, name) => {
    const timers = new TestTimers(0.01);
    rig.gw.closeOnOpen = code;
    const c = connect(timers);
    const events = record(c);
    c.start();
    const error = await next(c, 'error');
    expect(error).toMatchObject({ code: name, fatal: true, closeCode: code });
    expect(events.states).toEqual(['connecting', 'closed']);
    expect(timers.pending).toBe(0);
    expect(rig.gw.upgrades).toBe(1);
  });

  it('pings while frames come, and drops a socket that stops answering', async () => {
    const timers = new TestTimers(0.1);
    const c = connect(timers, { pingIntervalMs: 1_000, random: () => 0.5 });
    c.start();
    await next(c, 'state', (s) => s === 'open');
    const pings = () => rig.gw.sockets[0]?.frames.filter((f) => f.type === 'ping').length ?? 0;
    await until(() => pings() >= 3, 'three answered pings');
    expect(rig.gw.upgrades).toBe(1);
    expect(c.state).toBe('open');

    rig.gw.answerPings = false;
    await next(c, 'state', (s) => s === 'connecting');
    await next(c, 'state', (s) => s === 'open');
    expect(rig.gw.upgrades).toBe(2);
    await until(() => rig.gw.sockets[0]?.closeCode !== undefined, 'the dead socket to close');
  });

  it('drops a socket that gets no badge within connectTimeoutMs', async () => {
    const timers = new TestTimers(0.1);
    const c = connect(timers, { connectTimeoutMs: 1_000, random: () => 0.1 });
    rig.gw.silent = true;
    c.start();
    await until(() => rig.gw.upgrades >= 2, 'a second attempt');
    expect(c.state).toBe('connecting');
    await until(() => rig.gw.sockets[0]?.closeCode !== undefined, 'the silent socket to close');
    rig.gw.silent = false;
    await next(c, 'state', (s) => s === 'open');
    expect(timers.delays.filter((d) => d === 1_000).length).toBeGreaterThanOrEqual(2);
  });

  it('close() is idempotent: closes the socket with 1000 and leaves no timer', async () => {
    const timers = new TestTimers(0.01);
    const c = connect(timers, { pingIntervalMs: 30_000 });
    const events = record(c);
    c.start();
    await next(c, 'state', (s) => s === 'open');
    c.close();
    c.close();
    expect(c.state).toBe('closed');
    expect(events.states).toEqual(['connecting', 'open', 'closed']);
    expect(timers.pending).toBe(0);
    await until(() => rig.gw.sockets[0]?.closeCode !== undefined, 'the server to see the close');
    expect(rig.gw.sockets[0]?.closeCode).toBe(1000);
    expect(rig.gw.upgrades).toBe(1);

    c.start(); // and starts again
    await next(c, 'state', (s) => s === 'open');
    expect(rig.gw.upgrades).toBe(2);
  });

  it('close() while connecting stops the attempt', async () => {
    const timers = new TestTimers(0.01);
    rig.gw.refuseUpgrades = Infinity;
    const c = connect(timers, { random: () => 0.5 });
    c.start();
    await until(() => rig.gw.upgrades >= 2, 'two attempts');
    c.close();
    expect(c.state).toBe('closed');
    expect(timers.pending).toBe(0);
  });
});

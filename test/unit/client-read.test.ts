import { BubbleClient } from '@bubble/client';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  GOOD,
  makeBadge,
  next,
  record,
  TestTimers,
  until,
  useFakeGateway,
} from '../client/support.js';

const rig = useFakeGateway({ readTimeoutMs: 600_000, random: () => 0.5 });
const { connect } = rig;

beforeEach(() => {
  rig.gw.badge = { ...rig.gw.badge, feed: 3, total: 3, display: '3' };
});

const posts = () => rig.gw.requests.filter((r) => r.method === 'POST');
const readFrames = () => rig.gw.sockets.flatMap((s) => s.frames.filter((f) => f.type === 'read'));

describe('BubbleClient.read', () => {
  it('goes over the socket when one is authenticated', async () => {
    const c = connect(new TestTimers(0.01));
    const events = record(c);
    c.start();
    await next(c, 'state', (s) => s === 'open');
    const badge = await c.read({ scope: 'feed', upTo: 1_700_000_000_000 });
    expect(badge).toMatchObject({ epoch: 'E1', version: 2, feed: 0 });
    expect(c.badge).toEqual(badge);
    // The icon's number is the badge's total, the number a push carries.
    expect(c.iconBadge).toBe(badge.total);
    expect(readFrames()).toEqual([{ type: 'read', scope: 'feed', upTo: 1_700_000_000_000 }]);
    expect(posts()).toEqual([]);
    expect(events.badges.map((b) => b.version)).toEqual([1, 2]);
  });

  it('goes over HTTP when no socket is open, and takes the answer in', async () => {
    const c = connect(new TestTimers(0.01));
    const events = record(c);
    const badge = await c.read({ scope: 'all' }); // never started
    expect(badge).toMatchObject({ version: 2, feed: 0 });
    expect(c.badge).toEqual(badge);
    expect(events.badges).toEqual([badge]);
    const [post] = posts();
    expect(post?.path).toBe('/v1/badge/read');
    expect(post?.body).toEqual({ scope: 'all' });
    expect(post?.headers.authorization).toBe(`Bearer ${GOOD}`);
    expect(post?.headers['content-type']).toBe('application/json');
    expect(rig.gw.upgrades).toBe(0);
  });

  it('goes over HTTP while polling', async () => {
    rig.gw.refuseUpgrades = Infinity;
    const c = connect(new TestTimers(0.01));
    c.start();
    await next(c, 'state', (s) => s === 'polling');
    const badge = await c.read({ scope: 'reddot', name: 'settings' });
    expect(badge.feed).toBe(0);
    expect(posts().map((p) => p.body)).toEqual([{ scope: 'reddot', name: 'settings' }]);
  });

  it('falls back to HTTP when no badge frame comes within readTimeoutMs', async () => {
    const timers = new TestTimers(0.01);
    const c = connect(timers, { readTimeoutMs: 2_000 });
    c.start();
    await next(c, 'state', (s) => s === 'open');
    rig.gw.answerReads = false;
    const badge = await c.read({ scope: 'feed' });
    expect(badge.feed).toBe(0);
    expect(readFrames()).toHaveLength(1);
    expect(posts()).toHaveLength(1);
    expect(timers.delays).toContain(2_000);
  });

  it('falls back to HTTP when the socket closes with a read in flight', async () => {
    const c = connect(new TestTimers(0.01), { readTimeoutMs: 600_000 });
    c.start();
    await next(c, 'state', (s) => s === 'open');
    rig.gw.answerReads = false;
    const reading = c.read({ scope: 'notices', upTo: 7 });
    await until(() => readFrames().length === 1, 'the read frame');
    rig.gw.open[0]?.ws.terminate();
    const badge = await reading;
    expect(badge.feed).toBe(0);
    expect(posts().map((p) => p.body)).toEqual([{ scope: 'notices', upTo: 7 }]);
  });

  it('does not let an HTTP answer overtaken by another epoch switch the epoch back', async () => {
    const late = makeBadge('E1', 7);
    const c: BubbleClient = connect(new TestTimers(0.01), {
      readTimeoutMs: 1_000,
      fetch: async () => {
        // While the answer (of the old epoch) is on its way, the socket brings a new epoch.
        rig.gw.push(makeBadge('E2', 1));
        await next(c, 'badge', (b) => b.epoch === 'E2');
        return { status: 200, headers: { get: () => null }, json: async () => late };
      },
    });
    c.start();
    await next(c, 'state', (s) => s === 'open');
    rig.gw.answerReads = false;
    const badge = await c.read({ scope: 'feed' }); // times out, then "HTTP" answers E1.7
    expect(badge).toMatchObject({ epoch: 'E2', version: 1 });
    expect(c.badge).toMatchObject({ epoch: 'E2', version: 1 });
  });

  it('rejects with the code of an error frame, and the socket stays open', async () => {
    const c = connect(new TestTimers(0.01));
    const events = record(c);
    c.start();
    await next(c, 'state', (s) => s === 'open');
    rig.gw.readError = { code: 'UB_ERR_FORBIDDEN', message: 'not a member' };
    await expect(c.read({ scope: 'conversation', id: 'c7', seq: 4 })).rejects.toMatchObject({
      name: 'BubbleClientError',
      code: 'UB_ERR_FORBIDDEN',
      message: 'not a member',
      fatal: false,
    });
    expect(readFrames()).toEqual([{ type: 'read', scope: 'conversation', id: 'c7', seq: 4 }]);
    expect(c.state).toBe('open');
    expect(posts()).toEqual([]);
    expect(events.errors).toEqual([]); // the rejection carries it
  });

  it('rejects with the status and code of an HTTP error', async () => {
    const c = connect(new TestTimers(0.01));
    await expect(c.read({ scope: 'conversation', id: 'c7' })).rejects.toMatchObject({
      code: 'UB_ERR_FORBIDDEN',
      status: 403,
      fatal: false,
    });
  });
});

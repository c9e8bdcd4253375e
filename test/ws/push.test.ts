/**
 * Live pushes over GET /v1/ws (docs/protocol.md "Frames", shared spec api.md "WebSocket"):
 * a post reaches every device of every affected online user and nobody else; a read on one
 * device reaches the user's other devices; versions only grow on a connection; connections are
 * what make a user online; polls are answered 304 from the gateway's cache until a push.
 * Real servers: an in-process gateway with a core and a scheduler, on memory and on Redis.
 */
import { describe, expect, it } from 'vitest';
import {
  ENGINES,
  call,
  follow,
  ingest,
  platformBadge,
  sweeps,
  tokenFor,
  useEngine,
  type Badge,
} from './support.js';
import { connect, expectVersionsIncrease, ids, type Client } from './live-client.js';
import { waitFor } from '@bubble/test-utils';

for (const engine of ENGINES) {
  describe(`live pushes [${engine}]`, () => {
    const rig = useEngine(engine);

    it('a post reaches every socket of every online follower, and nobody else', async () => {
      const app = await rig.start();
      const [author] = ids('author', 1) as [string];
      const followers = ids('fan', 3);
      const others = ids('other', 2);
      for (const user of followers) await follow(app, user, author);
      // others follow someone else, who does not post
      for (const user of others) await follow(app, user, `${author}x`);

      const sockets = new Map<string, Client[]>();
      for (const user of [...followers, ...others]) {
        const devices = [
          await connect(app, user, `${user}/a`),
          await connect(app, user, `${user}/b`),
        ];
        sockets.set(user, devices);
      }
      for (const [, devices] of sockets) for (const s of devices) expect(s.lastBadge!.feed).toBe(0);
      const seen = new Map([...sockets].flatMap(([, d]) => d.map((s) => [s, s.badges.length])));

      await ingest(app, [{ author, id: 'p1', ts: Date.now() - 1000 }]);
      const pushed: Badge[] = [];
      for (const user of followers) {
        for (const s of sockets.get(user)!) {
          pushed.push(await s.waitBadge((b) => b.feed === 1, { message: 'no push after a post' }));
        }
      }
      // Both devices of one user got the same badge, and it is what the store holds.
      for (const user of followers) {
        const [a, b] = sockets.get(user)!.map((s) => s.lastBadge!);
        expect(a).toEqual(b);
        const stored = await platformBadge(app, user);
        expect({ epoch: stored.epoch, version: stored.version, feed: stored.feed }).toEqual({
          epoch: a!.epoch,
          version: a!.version,
          feed: 1,
        });
        expect(a).toMatchObject({ user, total: 1, display: '1' });
      }

      // Nothing for the others: two more sweeps after the push, then a ping/pong round trip on
      // each of their sockets (a push sent before the pong would have arrived before it).
      await sweeps(app, 2);
      for (const user of others) {
        for (const s of sockets.get(user)!) {
          await s.roundTrip();
          expect(s.badges.length, `${s.label} got ${JSON.stringify(s.badges)}`).toBe(seen.get(s));
          expect(s.lastBadge!.feed).toBe(0);
        }
      }

      // A second post: feed 2 everywhere, versions only grow.
      await ingest(app, [{ author, id: 'p2', ts: Date.now() - 500 }]);
      for (const user of followers) {
        for (const s of sockets.get(user)!) await s.waitBadge((b) => b.feed === 2);
      }
      for (const [, devices] of sockets) {
        for (const s of devices) {
          expectVersionsIncrease(s);
          expect(s.malformed).toEqual([]);
          expect(s.closed).toBeNull();
        }
      }
      expect(app.logs.filter((l) => l.level >= 50)).toEqual([]);

      // The push queue's figures on /metrics: every routed change was pushed or superseded, and
      // each push's wait was observed. Two posts reached three followers: at least six pushes.
      const figures = await pushFigures(app);
      expect(figures.backlog).toBe(0);
      expect(figures.pushed).toBeGreaterThanOrEqual(6);
      expect(figures.routed).toBe(figures.pushed + figures.superseded);
      expect(figures.waits).toBe(figures.pushed);
    });

    it('a read on one device reaches the other devices, over the socket and over HTTP', async () => {
      const app = await rig.start();
      const [author, user] = ids('u', 2) as [string, string];
      await follow(app, user, author);
      const a = await connect(app, user, 'A');
      const b = await connect(app, user, 'B');
      const t0 = Date.now() - 10_000;
      await ingest(
        app,
        [0, 1, 2, 3].map((i) => ({ author, id: `p${i}`, ts: t0 + i * 1000 })),
      );
      await a.waitBadge((x) => x.feed === 4);
      await b.waitBadge((x) => x.feed === 4);

      // read over the socket of A, up to the first post: A gets the new badge back, B too
      let fromB = b.badges.length;
      a.send({ type: 'read', scope: 'feed', upTo: t0 });
      const onA = await a.waitBadge((x) => x.feed === 3);
      const onB = await b.waitBadge((x) => x.feed === 3, { from: fromB });
      expect(onB).toEqual(onA);

      // read over HTTP (no socket involved): both sockets get the badge the response carries
      const token = await tokenFor(user);
      fromB = b.badges.length;
      const fromA = a.badges.length;
      const reply = await call(app, 'POST', '/v1/badge/read', {
        body: { scope: 'feed', upTo: t0 + 1000 },
        headers: { authorization: `Bearer ${token}` },
      });
      expect(reply.status, reply.text).toBe(200);
      const answered = JSON.parse(reply.text) as Badge;
      expect(answered.feed).toBe(2);
      expect(reply.headers.get('etag')).toBe(`"${answered.epoch}.${answered.version}"`);
      expect(await a.waitBadge((x) => x.feed === 2, { from: fromA })).toEqual(answered);
      expect(await b.waitBadge((x) => x.feed === 2, { from: fromB })).toEqual(answered);

      // read "all" over the socket of B
      b.send({ type: 'read', scope: 'all' });
      await b.waitBadge((x) => x.feed === 0);
      await a.waitBadge((x) => x.feed === 0);

      // a read that changes nothing is answered on its socket with the badge as it is, and
      // sends nothing to the other devices (the version did not move)
      await sweeps(app, 2);
      const counts = [a.badges.length, b.badges.length];
      const unchanged = a.lastBadge!;
      a.send({ type: 'read', scope: 'all' });
      const answer = await a.waitBadge(() => true, { from: counts[0] });
      // (the same state; only computedAt is the read's own time)
      expect({ ...answer, computedAt: 0 }).toEqual({ ...unchanged, computedAt: 0 });
      await sweeps(app, 1);
      await a.roundTrip();
      await b.roundTrip();
      expect([a.badges.length, b.badges.length]).toEqual([counts[0]! + 1, counts[1]]);

      // and a post after the reads counts from the cursor (the last read moved it to the
      // answer's time)
      await ingest(app, [{ author, id: 'p9', ts: answer.computedAt + 1 }]);
      await a.waitBadge((x) => x.feed === 1, { from: counts[0]! + 1 });
      await b.waitBadge((x) => x.feed === 1, { from: counts[1] });

      for (const s of [a, b]) {
        expectVersionsIncrease(s);
        expect(s.frames.filter((f) => f.type === 'error')).toEqual([]);
        expect(s.malformed).toEqual([]);
      }
      expect(a.lastBadge).toEqual(b.lastBadge);
    });

    it('sockets make a user online: the first opens presence, closing the last ends it', async () => {
      const app = await rig.start();
      const [user] = ids('p', 1) as [string];
      const online = () => app.store.presence.isOnline(user);
      const ws = app.gateway.ws!;
      expect(await online()).toBe(false);

      const first = await connect(app, user, 'first');
      expect(await online()).toBe(true);
      const second = await connect(app, user, 'second');
      expect(ws.connections).toBe(2);

      first.close();
      await first.waitClose();
      await waitFor(() => ws.connections === 1, { message: 'the gateway kept the closed socket' });
      expect(await online()).toBe(true);
      expect(app.gateway.liveUsers!.size).toBe(1);

      second.close();
      await second.waitClose();
      await waitFor(async () => !(await online()), {
        message: 'still online after the last close',
      });
      await waitFor(() => app.gateway.liveUsers!.size === 0, { message: 'still held' });

      // and online again with a new socket
      const third = await connect(app, user, 'third');
      expect(await online()).toBe(true);
      third.close();
      await waitFor(async () => !(await online()), { message: 'still online after the close' });
    });

    it('GET /v1/badge with If-None-Match: 304 while held and unchanged, 200 after a push', async () => {
      const app = await rig.start();
      const [author, user] = ids('e', 2) as [string, string];
      await follow(app, user, author);
      const socket = await connect(app, user);
      const token = await tokenFor(user);
      const poll = (etag?: string) =>
        call(app, 'GET', '/v1/badge', {
          headers: {
            authorization: `Bearer ${token}`,
            ...(etag !== undefined ? { 'if-none-match': etag } : {}),
          },
        });

      const first = await poll();
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag')!;
      const held = socket.lastBadge!;
      expect(etag).toBe(`"${held.epoch}.${held.version}"`);
      expect(Number(first.headers.get('x-poll-interval'))).toBeGreaterThan(0);

      for (let i = 0; i < 3; i++) {
        const again = await poll(etag);
        expect(again.status).toBe(304);
        expect(again.text).toBe('');
        expect(again.headers.get('etag')).toBe(etag);
      }

      const from = socket.badges.length;
      await ingest(app, [{ author, id: 'p1', ts: Date.now() - 1000 }]);
      const pushed = await socket.waitBadge((b) => b.feed === 1, { from });
      const changed = await poll(etag);
      expect(changed.status).toBe(200);
      expect(JSON.parse(changed.text)).toEqual(pushed);
      const newTag = changed.headers.get('etag')!;
      expect(newTag).toBe(`"${pushed.epoch}.${pushed.version}"`);
      expect(newTag).not.toBe(etag);
      expect((await poll(newTag)).status).toBe(304);
      // an ETag list holding the current one is a match too; an old one alone is not
      expect((await poll(`${etag}, ${newTag}`)).status).toBe(304);
      expect((await poll(etag)).status).toBe(200);
    });
  });
}

/** The gateway's push-queue metrics, as /metrics has them. */
async function pushFigures(app: Awaited<ReturnType<ReturnType<typeof useEngine>['start']>>) {
  const metrics = await app.gateway.metrics.registry.getMetricsAsJSON();
  const sum = (name: string, metricName = name) =>
    (metrics.find((m) => m.name === name)?.values ?? [])
      .filter((v) => ((v as { metricName?: string }).metricName ?? name) === metricName)
      .reduce((total, v) => total + v.value, 0);
  return {
    routed: sum('bubble_gateway_changes_routed_total'),
    superseded: sum('bubble_gateway_changes_superseded_total'),
    pushed: sum('bubble_gateway_pushes_total'),
    backlog: sum('bubble_gateway_push_backlog'),
    waits: sum('bubble_gateway_push_wait_seconds', 'bubble_gateway_push_wait_seconds_count'),
  };
}

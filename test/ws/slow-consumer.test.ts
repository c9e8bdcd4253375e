/**
 * Slow consumers (docs/protocol.md "Close codes", 1013: "this connection could not keep up
 * with its pushes"): a socket that stops reading while its user's badge keeps changing is
 * closed once its unsent pushes pass the bound; the user's other socket, and other users'
 * sockets, keep receiving pushes throughout.
 *
 * The bound (WsGatewayOptions.maxBufferedBytes, 256 KiB by default) is not reachable through
 * HttpGateway's `live` options, and would not help much anyway: `ws`'s bufferedAmount only
 * counts what the kernel would not take, and on loopback TCP the kernel takes ~1–4 MiB (send
 * buffer autotuning) first. So the slow client comes in through a UNIX socket handed to the
 * same gateway (kernel buffers ~64 KiB: ~1.5 k pushes fill it), and, on memory, through TCP
 * too (~17 k pushes). The pushes: thousands of posts, then reads that each move the feed down
 * by one, sent one at a time as `read` frames on the user's other socket.
 */
import { describe, expect, it } from 'vitest';
import { CLOSE, ENGINES, follow, ingest, tokenFor, useEngine, type Engine } from './support.js';
import { connect, expectVersionsIncrease, ids, Client } from './live-client.js';

const POSTS_PER_ROUND = 2500;
const MAX_READS = 40_000;

const CASES: Array<{ engine: Engine; transport: 'unix' | 'tcp' }> = [
  ...ENGINES.map((engine) => ({ engine, transport: 'unix' as const })),
  { engine: 'memory', transport: 'tcp' },
];

for (const { engine, transport } of CASES) {
  describe(`slow consumers [${engine}, slow client over ${transport}]`, () => {
    const rig = useEngine(engine);

    it('a socket that stops reading is closed; the other sockets keep getting pushes', async () => {
      // Thousands of reads from one user, one at a time: the read frames' per-user budget (the
      // client routes', burst 40 then 5/s) raised as an operator may, or they would be refused.
      const generous = { perSecond: 1_000_000, burst: 1_000_000 };
      const app = await rig.start({ clientLimits: { perUser: generous, perAddress: generous } });
      const ws = app.gateway.ws!;
      const [author, user, otherAuthor, other] = ids('s', 4) as [string, string, string, string];
      await follow(app, user, author);
      await follow(app, other, otherAuthor);

      const url = transport === 'unix' ? await app.unixWsUrl() : app.wsUrl;
      const slow = Client.open(app, { url, token: await tokenFor(user) }, 'slow');
      await slow.waitBadge((b) => b.user === user);
      slow.ws.pause(); // stops reading: the kernel buffers fill, then the gateway's
      const fast = await connect(app, user, 'fast');
      const neighbour = await connect(app, other, 'neighbour');
      expect(ws.connections).toBe(3);

      const base = Date.now() - 3_600_000;
      let posted = 0;
      let read = 0;
      let neighbourPosts = 0;
      while (ws.connections === 3) {
        if (read >= MAX_READS) throw new Error(`the slow socket survived ${read} pushes`);
        if (read >= posted) {
          await ingest(
            app,
            Array.from({ length: POSTS_PER_ROUND }, (_, k) => ({
              author,
              id: `p${posted + k}`,
              ts: base + posted + k,
            })),
          );
          posted += POSTS_PER_ROUND;
        }
        // One read at a time, each past one more post: feed − 1, a new version, a push to all
        // of the user's sockets.
        const from = fast.badges.length;
        fast.send({ type: 'read', scope: 'feed', upTo: base + read });
        read++;
        await fast.waitBadge((b) => b.feed === posted - read, { from });
        // meanwhile, another user's pushes keep flowing
        if (read % 1000 === 0) {
          neighbourPosts++;
          const seen = neighbour.badges.length;
          await ingest(app, [
            { author: otherAuthor, id: `n${neighbourPosts}`, ts: Date.now() - 500 },
          ]);
          await neighbour.waitBadge((b) => b.feed === neighbourPosts, { from: seen });
        }
      }
      // The slow one is the one that went, for being slow; the others are all there.
      expect(slow.closed, 'the paused client cannot have read its close yet').toBeNull();
      expect(fast.closed).toBeNull();
      expect(neighbour.closed).toBeNull();
      expect(ws.connections).toBe(2);
      expect(await app.store.presence.isOnline(user)).toBe(true);

      // The neighbour still gets pushes after the slow one is gone, and the fast one reads on.
      const seen = neighbour.badges.length;
      await ingest(app, [{ author: otherAuthor, id: 'last', ts: Date.now() - 100 }]);
      await neighbour.waitBadge((b) => b.feed === neighbourPosts + 1, { from: seen });
      const from = fast.badges.length;
      fast.send({ type: 'read', scope: 'all' });
      await fast.waitBadge((b) => b.feed === 0, { from });
      await fast.roundTrip();
      await neighbour.roundTrip();

      // Reading again, the slow client finds what was sent before the gateway gave up on it,
      // then the end of the connection: 1013 if the close frame made it, else an abnormal 1006.
      slow.ws.resume();
      const closed = await slow.waitClose(15_000);
      expect([CLOSE.overloaded, 1006]).toContain(closed.code);
      expect(slow.badges.length).toBeGreaterThan(1);
      expect(slow.badges.length).toBeLessThan(fast.badges.length);
      for (const s of [slow, fast, neighbour]) {
        expectVersionsIncrease(s);
        expect(s.malformed).toEqual([]);
      }
      expect(app.logs.filter((l) => l.level >= 50)).toEqual([]);
    }, 60_000);
  });
}

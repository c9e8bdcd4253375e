/**
 * Fencing through a Redis that lost its data (issue 16, item 1). A core is frozen (SIGSTOP)
 * with one of its fenced badge writes in flight; the main Redis is killed and started again
 * empty on the same port; the platform feeds its sources again; the other core takes every pool.
 * Only then does the frozen core's write reach Redis, on a new connection (as a proxy or a
 * client that redials and resends does), and the core is resumed.
 *
 * Before this change the new owner's tokens started again from 1 (an INCR of a missing key), so
 * the old owner's token (1 or 2) was as new as the new owner's and its write was accepted. Now
 * a token issued after the loss is larger than every token before it, only the current token
 * is accepted, and the old write is refused and counted.
 */
import net from 'node:net';
import { startRedisServer, waitFor, type RedisServerHandle } from '@bubble/test-utils';
import { describe, expect } from 'vitest';
import { scriptSource } from '../../packages/store/src/redis/scripts.js';
import { twoCoresUnderLoad, useClusterTests } from './cluster-test.js';
import { heldFences, heldPools, tenures } from './pool-tenures.js';
import { type Cluster } from './harness.js';
import { InFlightHold, listenLocally } from './redis-proxy-parts.js';

/** One client connection and its current connection to the server, if it has one. */
interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
}

/**
 * A TCP proxy in front of the main Redis for one process. Armed, it holds the first chunk a
 * client sends that matches `pattern`, and all that follows on that connection, until
 * release(). The held connection outlives its upstream: released after the server restarted,
 * its commands go to the new server on a new upstream connection.
 */
class RedialingProxy {
  private readonly links = new Set<Link>();
  private readonly hold = new InFlightHold<Link>();

  private constructor(
    private readonly server: net.Server,
    private readonly upstreamPort: number,
    readonly url: string,
  ) {}

  static async start(upstreamPort: number): Promise<RedialingProxy> {
    const { server, url } = await listenLocally();
    const proxy = new RedialingProxy(server, upstreamPort, url);
    server.on('connection', (client: net.Socket) => proxy.accept(client));
    return proxy;
  }

  arm(pattern: RegExp): Promise<RegExpExecArray> {
    return this.hold.arm(pattern);
  }

  release(): void {
    const released = this.hold.release();
    if (!released) return;
    const link = released.owner;
    if (!link.upstream) this.dial(link);
    for (const chunk of released.chunks) link.upstream!.write(chunk);
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.links) {
      client.destroy();
      upstream?.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const link: Link = { client, upstream: null };
    this.links.add(link);
    this.dial(link);
    client.on('data', (chunk: Buffer) => {
      if (!this.hold.takes(link, chunk)) link.upstream?.write(chunk);
    });
    const end = () => {
      client.destroy();
      link.upstream?.destroy();
      this.links.delete(link);
    };
    client.on('close', end);
    client.on('error', end);
  }

  private dial(link: Link): void {
    const upstream = net.connect({ host: '127.0.0.1', port: this.upstreamPort });
    link.upstream = upstream;
    upstream.on('data', (chunk: Buffer) => link.client.write(chunk));
    const lost = () => {
      upstream.destroy();
      if (link.upstream !== upstream) return;
      link.upstream = null;
      // The held connection waits for release(); any other one ends, as the server did.
      if (this.hold.holder !== link) link.client.destroy();
    };
    upstream.on('close', lost);
    upstream.on('error', lost);
  }
}

/** Kills the main redis-server (SIGKILL, found by its pid) and starts an empty one on its port. */
async function restartStoreEmpty(c: Cluster): Promise<RedisServerHandle> {
  const port = Number(new URL(c.storeUrl).port);
  const info = await c.redis.info('server');
  const pid = Number(/process_id:(\d+)/.exec(info)![1]);
  process.kill(pid, 'SIGKILL');
  await waitFor(
    () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    },
    { timeoutMs: 5_000, message: 'the main redis-server did not die' },
  );
  return startRedisServer({ port });
}

describe('cluster: fencing after the main Redis lost its data', () => {
  const clusterTest = useClusterTests();

  clusterTest(
    "a frozen core's write that reaches a Redis restarted empty is refused; badges exact",
    { label: 'fence-loss', tag: 'fencing, Redis restarted empty', timeoutMs: 120_000 },
    async (run) => {
      const { c } = run;
      const proxy = await RedialingProxy.start(Number(new URL(c.storeUrl).port));
      let restarted: RedisServerHandle | undefined;
      try {
        const { cores, work } = await twoCoresUnderLoad(run, {
          online: 0.8,
          ops: 10,
          firstCoreEnv: { REDIS_URL: proxy.url },
        });
        const [sleeper, other] = cores;
        const sleeperPools = await c.poolsOf(sleeper);
        const oldFence = heldFences(sleeper);
        const fencesBefore = [...heldFences(sleeper).values(), ...heldFences(other).values()];
        const authors = work.authorsFollowedBy(work.onlineIn(sleeperPools));
        expect(authors.length).toBeGreaterThan(0);

        // Hold the sleeper's next badge write on the wire, and freeze it right then.
        let heldPool: number | undefined;
        void proxy.arm(/\{p:(\d+)\}:changes/).then((match) => {
          sleeper.signal('SIGSTOP');
          heldPool = Number(match[1]);
        });
        for (const author of authors) await work.post(author, 1);
        await waitFor(() => heldPool !== undefined, {
          timeoutMs: 10 * c.tickMs + 2_000,
          message: 'the sleeper never wrote a badge',
        });
        const pool = heldPool!;
        expect(sleeperPools).toContain(pool);

        const restartedAt = Date.now();
        restarted = await restartStoreEmpty(c);
        await waitFor(async () => (await c.redis.ping().catch(() => null)) === 'PONG', {
          message: 'the test client reconnects to the restarted redis-server',
        });
        // The change messages are recorded again once the harness's subscriber is back.
        await waitFor(async () => (await c.redis.call('PUBSUB', 'NUMPAT')) === 2, {
          message: "the harness's pattern subscriptions are back",
        });
        await work.refeed();

        // The other core owns and holds every pool, those of the frozen core under a token
        // taken after the restart.
        await waitFor(
          async () => {
            const owners = await c.owners();
            const held = heldPools(other);
            const taken = new Set(
              tenures([other])
                .filter((t) => t.takenAt >= restartedAt && t.droppedAt === undefined)
                .map((t) => t.pool),
            );
            return (
              owners.every((o, p) => o === other.nodeId && held.has(p)) &&
              [...oldFence.keys()].every((p) => taken.has(p))
            );
          },
          {
            // The leader and the assignment start over too, and every pool changes hands.
            timeoutMs: 2 * c.settleMs,
            intervalMs: 50,
            message: `${other.name} did not take the frozen core's pools after the restart`,
          },
        );
        const newFence = tenures([other])
          .filter((t) => t.takenAt >= restartedAt)
          .map((t) => t.fence);
        await work.expectWrittenBy([other]);

        // The frozen write arrives now, under its old token, on a new connection: refused.
        const staleBefore = (await c.staleWrites())[pool]!;
        // It runs by EVALSHA, as sent: the restarted server is given the script first.
        await c.redis.script('LOAD', scriptSource('saveBadges').lua);
        const releasedAt = Date.now();
        proxy.release();
        await waitFor(async () => (await c.staleWrites())[pool]! > staleBefore, {
          timeoutMs: 5_000,
          message: `the old owner's write to pool ${pool} was not refused`,
        });
        expect(await work.storedMismatches([...work.model.online])).toEqual([]);
        // Never reissued: every token after the loss is above every token before it.
        const lowestNew = Math.min(...newFence);
        expect(lowestNew).toBeGreaterThan(Math.max(...fencesBefore));

        sleeper.signal('SIGCONT');
        await c.waitSettled(cores, c.settleMs);
        for (const author of authors) await work.post(author, 1);
        await work.expectWrittenBy(cores);

        // No accepted write after the restart carried a token of the pool other than one its
        // owner took after the restart.
        const takenSince = tenures(cores).filter((t) => t.takenAt >= restartedAt);
        const foreign = c.published.filter(
          (m) =>
            m.receivedAt >= releasedAt &&
            m.fence !== null &&
            !takenSince.some((t) => t.pool === m.pool && t.fence === m.fence),
        );
        expect(foreign).toEqual([]);
        const oldTokens = c.published.filter(
          (m) => m.receivedAt >= restartedAt && oldFence.get(m.pool) === m.fence,
        );
        expect(oldTokens).toEqual([]);
        c.expectFencesInOrder();
        const stale = await c.staleWritesTotal();
        return (
          `write to pool ${pool} held, core frozen, Redis restarted empty and re-fed; ` +
          `${sleeperPools.length} pools of the frozen core (${newFence.length} tenures in all) taken by ` +
          `${other.name} under tokens ≥ ${lowestNew} (> ${Math.max(...fencesBefore)} before); ` +
          `the old write refused (stale writes counted since the restart: ${stale}); ` +
          `${c.published.length} change messages checked, none under a foreign token`
        );
      } finally {
        await proxy.close();
        await restarted?.stop();
      }
    },
  );
});

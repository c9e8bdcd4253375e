/**
 * The main Redis restarted under a running cluster (a server, two cores, a gateway, clients on
 * WebSockets), while posts flow:
 *
 * - kill -9 and a restart from its AOF (`appendonly yes`, `appendfsync everysec`: a process
 *   crash loses nothing it acknowledged);
 * - kill -9 and a restart empty, after which the platform feeds its sources again (follows,
 *   presence, every post not deleted).
 *
 * Every process stays up, every pool is owned again, the badges are exact after quiet (stored,
 * served and each socket's newest, against the brute-force definition), and no socket is ever
 * sent a version older than one it had within the same epoch (every frame is recorded). The
 * platform retries a post until it is answered 202, as a platform does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { afterAll, describe, expect } from 'vitest';
import { WebSocket } from 'ws';
import { twoCoresUnderLoad, useClusterTests, type ClusterRun } from './cluster-test.js';
import type { FeedWorkload } from './workload.js';

const AOF = ['--appendonly', 'yes', '--appendfsync', 'everysec'];

interface Frame {
  epoch: string;
  version: number;
  feed: number;
}

/** A user's socket, reopened whenever it closes; every badge frame of every socket is kept. */
class RecordedUser {
  readonly sockets: Frame[][] = [];
  private socket: WebSocket | undefined;
  private stopped = false;

  constructor(
    readonly user: string,
    private readonly gateway: RoleProcess,
    private readonly token: string,
  ) {
    this.open();
  }

  /** The newest badge the current socket was sent. */
  get latest(): Frame | undefined {
    return this.sockets.at(-1)?.at(-1);
  }

  /** Frames that went back within an epoch, on any socket. */
  regressions(): string[] {
    const out: string[] = [];
    this.sockets.forEach((frames, socket) => {
      const highest = new Map<string, number>();
      for (const { epoch, version } of frames) {
        const seen = highest.get(epoch) ?? -1;
        if (version < seen)
          out.push(`${this.user} socket ${socket}: ${epoch} v${version} after v${seen}`);
        else highest.set(epoch, version);
      }
    });
    return out;
  }

  close(): void {
    this.stopped = true;
    this.socket?.terminate();
  }

  private open(): void {
    const frames: Frame[] = [];
    this.sockets.push(frames);
    const socket = (this.socket = new WebSocket(this.gateway.wsUrl, {
      headers: { authorization: `Bearer ${this.token}` },
      perMessageDeflate: false,
    }));
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string; badge?: Frame };
      if (frame.type === 'badge' && frame.badge) {
        const { epoch, version, feed } = frame.badge;
        frames.push({ epoch, version, feed });
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.stopped) return;
      setTimeout(() => this.open(), 200).unref();
    });
  }
}

/**
 * Posts one at a time by authors the online users follow, each retried (same id, same ts)
 * until it is answered 202; stop() resolves to how many were accepted.
 */
function postsFlowing(work: FeedWorkload) {
  let stopped = false;
  let accepted = 0;
  let seq = 0;
  const authors = work.authorsFollowedBy([...work.model.online]);
  const loop = (async () => {
    while (!stopped) {
      const post = {
        author: authors[seq % authors.length]!,
        id: `r${++seq}`,
        ts: Date.now() - 2_000,
      };
      for (;;) {
        try {
          await work.ingest([post]);
          accepted++;
          break;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  })();
  return {
    get accepted() {
      return accepted;
    },
    stop: async () => {
      stopped = true;
      await loop;
      return accepted;
    },
  };
}

/**
 * The shared course of both tests: clients connected, posts flowing, the store restarted by
 * `restart` (which may feed the sources again), then everything checked after quiet.
 */
async function restartUnderLoad(
  run: ClusterRun,
  restart: (work: FeedWorkload) => Promise<void>,
  afterRestart: (work: FeedWorkload, watched: readonly string[]) => Promise<void> = async () =>
    undefined,
): Promise<string> {
  const { c } = run;
  const { cores, work } = await twoCoresUnderLoad(run, { online: 0.7, ops: 15 });
  const gateway = c.processes.find((p) => p.name.startsWith('gateway'))!;
  const watched = [...work.model.online].slice(0, 12);
  const clients = await Promise.all(
    watched.map(async (user) => new RecordedUser(user, gateway, await c.token(user))),
  );
  try {
    await waitFor(() => clients.every((client) => client.latest !== undefined), {
      timeoutMs: 10_000,
      message: 'a client never got its first badge',
    });
    const posting = postsFlowing(work);
    await waitFor(() => posting.accepted >= 5, { timeoutMs: 10_000, message: 'no post went in' });

    const restartedAt = Date.now();
    await restart(work);
    const before = posting.accepted;
    await waitFor(() => posting.accepted >= before + 10, {
      timeoutMs: 30_000,
      message: 'posts did not flow again after the restart',
    });
    const flowingAfter = Date.now() - restartedAt;
    const posted = await posting.stop();
    await afterRestart(work, watched);

    expect(c.processes.filter((p) => !p.alive).map((p) => p.name)).toEqual([]);
    await c.waitSettled(cores, c.settleMs);
    await work.expectWrittenBy(cores);
    const wrongSockets = async () => {
      const T = Date.now();
      return clients
        .filter((client) => client.latest?.feed !== work.model.feed(client.user, T))
        .map(
          (client) =>
            `${client.user}: socket ${client.latest?.feed} model ${work.model.feed(client.user, T)}`,
        );
    };
    await waitFor(async () => (await wrongSockets()).length === 0, {
      timeoutMs: 10_000,
      message: 'sockets did not show the exact badges',
    }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n  ${(await wrongSockets()).join('\n  ')}`);
    });
    await work.expectServedBadges();
    expect(clients.flatMap((client) => client.regressions())).toEqual([]);
    expect(c.processes.filter((p) => !p.alive).map((p) => p.name)).toEqual([]);

    const dropped: Record<string, number> = {};
    for (const core of cores) {
      for (const line of core.logs('pool dropped', restartedAt)) {
        const reason = String(line.reason);
        dropped[reason] = (dropped[reason] ?? 0) + 1;
      }
    }
    const gaps = cores.reduce(
      (n, core) =>
        n + core.lines.filter((l) => l.time >= restartedAt && /has a gap/.test(l.msg)).length,
      0,
    );
    const frames = clients.reduce((n, client) => n + client.sockets.flat().length, 0);
    const reopened = clients.reduce((n, client) => n + client.sockets.length - 1, 0);
    return (
      `${posted} posts while it restarted, flowing again ${flowingAfter} ms after the kill; ` +
      `${clients.length} clients, ${frames} frames, ${reopened} sockets reopened, none went back; ` +
      `${work.model.online.size} online users exact (stored, served, pushed); since the kill ` +
      `the cores logged ${gaps} log gaps and dropped pools ${JSON.stringify(dropped)}`
    );
  } finally {
    for (const client of clients) client.close();
  }
}

describe('cluster: the main Redis restarted', () => {
  const clusterTest = useClusterTests();
  const dir = mkdtempSync(path.join(tmpdir(), 'bubble-aof-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  clusterTest(
    'kill -9 and a restart from its AOF while posts flow: everything stays up and exact',
    {
      label: 'aof',
      tag: 'Redis restarted from its AOF',
      timeoutMs: 180_000,
      store: { dir, args: AOF },
    },
    async (run) => restartUnderLoad(run, () => run.c.restartStore({ dir, args: AOF })),
  );

  clusterTest(
    'kill -9 and a restart empty, then the platform feeds its sources again: exact again',
    { label: 'empty', tag: 'Redis restarted empty', timeoutMs: 180_000 },
    async (run) =>
      restartUnderLoad(
        run,
        () => run.c.restartStore(),
        // At once: the routes the restart emptied are written again by the gateway's resync
        // when its subscriber comes back, not only by its renewal a third of a TTL later.
        async (work) => work.refeed(),
      ),
  );
});

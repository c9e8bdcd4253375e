import os from 'node:os';
import { HOUR_MS, type SweepReport } from '@bubble/protocol';
import type { Assignment } from '@bubble/store';
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { startBenchRedis } from './bench-redis.js';
import { spawnRole, stopAll } from './children.js';
import { LivePosts } from './live-posts.js';
import { KEY_PREFIX, machineFacts, roleEnv, round2, seedStore } from './live-stack.js';
import { buildScenarioWorkload, percentile, type ScenarioWorkloadOptions } from './workload.js';

export interface ScaleOptions extends ScenarioWorkloadOptions {
  pools: number;
  postsPerSec: number;
  /** Join, leave and crash, this many times each. */
  rounds: number;
  tickMs: number;
  leaseMs: number;
  /** Bound on each wait for the cluster to settle. */
  settleSeconds: number;
}

export const SCALE_DEFAULTS: ScaleOptions = {
  users: 30_000,
  authors: 50_000,
  windowPosts: 200_000,
  followMedian: 150,
  followCap: 2000,
  pools: 100,
  postsPerSec: 200,
  rounds: 3,
  tickMs: 1000,
  leaseMs: 10_000,
  settleSeconds: 120,
  seed: 11,
  log: () => {},
};

const PRESENCE_TTL_MS = 3 * HOUR_MS;

/** One move of pools between cores, from the moment the change was made. */
interface MoveFigures {
  /** Until the leader's assignment reflected it. */
  assignedMs: number;
  /** Until every moved pool had its first fenced write from its new owner. */
  lastPoolWrittenMs: number;
  /** Until the cores' sweep reports held every pool and every online user again. */
  settledMs: number;
  pools: number;
  /**
   * Per moved pool, from the previous owner's last badge write to the new owner's first: how
   * long that pool's users got no pushes (changes happen in every pool every sweep here).
   */
  pushGapP50Ms: number;
  pushGapMaxMs: number;
}

/**
 * How long pools take to move when a bubble-core joins, leaves (SIGTERM) and dies (SIGKILL),
 * and how long their users go without pushes meanwhile: a real `bubble server` and two
 * `bubble core` children on a real redis-server, users online, posts arriving so that every
 * pool changes every sweep. The fenced writes are seen on the pools' audit channels.
 */
export async function benchScale(partial: Partial<ScaleOptions> = {}) {
  const options = { ...SCALE_DEFAULTS, ...partial };
  const { log } = options;
  const workload = buildScenarioWorkload('scale', options);
  const redis = await startBenchRedis(options);
  const { store, service, admin } = redis;
  const audit = new WriteAudit(redis.url, options.pools);
  const children: RoleProcess[] = [];
  let posting: LivePosts | undefined;
  const loadBefore = round2(os.loadavg()[0]!);
  try {
    await seedStore(store, service, workload, log, 'scale');
    for (let i = 0; i < workload.users.length; i += 5000) {
      const users = workload.users.slice(i, i + 5000);
      await store.presence.setOnline(users.map((user) => ({ user, ttlMs: PRESENCE_TTL_MS })));
    }
    await audit.start();
    const env = {
      ...roleEnv(redis.url, options.pools),
      BUBBLE_TICK: String(options.tickMs),
      BUBBLE_LEASE_MS: String(options.leaseMs),
    };
    const spawn = async (role: 'server' | 'core') => {
      const child = await spawnRole({ role, env, log });
      children.push(child);
      return child;
    };
    await spawn('server');
    await spawn('core');
    const cluster = new ClusterWatch(admin, options);
    await cluster.settled(1);
    log(`scale: one core holds ${options.pools} pools and ${options.users} users`);
    posting = new LivePosts(service, workload, {
      perSecond: options.postsPerSec,
      pacing: 'batch-then-pause',
      idPrefix: 's',
      label: 'scale',
      log,
    });
    posting.start();
    await audit.everyPoolWritten(options.settleSeconds);

    const joins: MoveFigures[] = [];
    const leaves: MoveFigures[] = [];
    const crashes: MoveFigures[] = [];
    for (let round = 1; round <= options.rounds; round++) {
      let second: RoleProcess | undefined;
      joins.push(
        await measureMove('join', round, cluster, audit, 2, async () => {
          second = await spawn('core');
        }),
      );
      leaves.push(
        await measureMove('leave (SIGTERM)', round, cluster, audit, 1, () => second!.stop()),
      );
      await measureMove('join again', round, cluster, audit, 2, async () => {
        second = await spawn('core');
      });
      crashes.push(
        await measureMove('crash (SIGKILL)', round, cluster, audit, 1, async () => {
          await second!.kill();
        }),
      );
    }
    await posting.stop();
    return {
      scenario: 'scale',
      users: options.users,
      pools: options.pools,
      tickMs: options.tickMs,
      leaseMs: options.leaseMs,
      postsPerSec: options.postsPerSec,
      rounds: options.rounds,
      join: summarize(joins),
      leave: summarize(leaves),
      crash: summarize(crashes),
      runs: { join: joins, leave: leaves, crash: crashes },
      loadAverage: [loadBefore, round2(os.loadavg()[0]!)],
      machine: machineFacts(),
    };
  } finally {
    await posting?.stop().catch(() => {});
    await stopAll(children);
    await audit.stop();
    await redis.stop();
  }
}

async function measureMove(
  label: string,
  round: number,
  cluster: ClusterWatch,
  audit: WriteAudit,
  cores: number,
  change: () => Promise<void>,
): Promise<MoveFigures> {
  const before = await cluster.assignment();
  const started = Date.now();
  audit.mark();
  await change();
  const after = await cluster.assignmentChanged(before.generation);
  const assignedMs = Date.now() - started;
  const moved = after.owners.flatMap((owner, pool) =>
    owner !== before.owners[pool] ? [pool] : [],
  );
  await cluster.settled(cores);
  const gaps = await audit.gaps(moved, cluster.options.settleSeconds);
  const figures: MoveFigures = {
    assignedMs,
    lastPoolWrittenMs: Math.max(...gaps.map((g) => g.firstNewAt)) - started,
    settledMs: cluster.settledAt - started,
    pools: moved.length,
    pushGapP50Ms: percentile(
      gaps.map((g) => g.gapMs).sort((a, b) => a - b),
      50,
    ),
    pushGapMaxMs: Math.max(...gaps.map((g) => g.gapMs)),
  };
  cluster.options.log(`scale: round ${round}, ${label}: ${JSON.stringify(figures)}`);
  return figures;
}

function summarize(moves: MoveFigures[]) {
  const field = (name: keyof MoveFigures) => {
    const values = moves.map((m) => m[name]).sort((a, b) => a - b);
    return { min: values[0] ?? 0, median: percentile(values, 50), max: values.at(-1) ?? 0 };
  };
  return {
    assignedMs: field('assignedMs'),
    lastPoolWrittenMs: field('lastPoolWrittenMs'),
    settledMs: field('settledMs'),
    pushGapP50Ms: field('pushGapP50Ms'),
    pushGapMaxMs: field('pushGapMaxMs'),
    pools: field('pools'),
  };
}

/** The assignment and the cores' sweep reports, read from Redis. */
class ClusterWatch {
  settledAt = 0;

  constructor(
    private readonly admin: Redis,
    readonly options: ScaleOptions,
  ) {}

  async assignment(): Promise<Assignment> {
    const json = await this.admin.get(`${KEY_PREFIX}:{g}:assignment`);
    if (json === null) return { generation: 0, owners: [] };
    return JSON.parse(json) as Assignment;
  }

  async assignmentChanged(generation: number): Promise<Assignment> {
    const next = await waitFor(
      async () => {
        const current = await this.assignment();
        return current.generation > generation ? current : null;
      },
      {
        timeoutMs: this.options.settleSeconds * 1000,
        intervalMs: 20,
        message: 'scale: the leader reassigns the pools',
      },
    );
    return next!;
  }

  /**
   * Until the latest report of each of the `cores` assigned cores, made after the assignment,
   * holds its pools, and all of them together every online user.
   */
  async settled(cores: number): Promise<void> {
    let state = 'nothing read yet';
    await waitFor(
      async () => {
        const assignment = await this.assignment();
        const owners = new Map<string, number>();
        for (const owner of assignment.owners) {
          if (owner !== null) owners.set(owner, (owners.get(owner) ?? 0) + 1);
        }
        if (owners.size !== cores || assignment.owners.includes(null)) return false;
        const raw = await this.admin.hgetall(`${KEY_PREFIX}:{g}:sweeps`);
        state = `assigned ${JSON.stringify(Object.fromEntries(owners))}; reports ${Object.values(raw).join(' ')}`;
        let users = 0;
        for (const [owner, pools] of owners) {
          const report = raw[owner] ? (JSON.parse(raw[owner]) as SweepReport) : undefined;
          if (!report || report.pools !== pools) return false;
          users += report.users;
        }
        if (users !== this.options.users) return false;
        this.settledAt = Date.now();
        return true;
      },
      {
        timeoutMs: this.options.settleSeconds * 1000,
        intervalMs: 20,
        message: `scale: ${cores} cores hold every pool and user`,
      },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; last seen: ${state}`);
    });
  }
}

/** The fenced badge writes of every pool (token and time), from the pools' written channels. */
class WriteAudit {
  private readonly subscriber: Redis;
  /** Per pool: the latest write's token and time, and the writes since mark(). */
  private latest = new Map<number, { fence: number; at: number }>();
  private sinceMark = new Map<number, { fence: number; at: number }[]>();
  private markedLatest = new Map<number, { fence: number; at: number }>();

  constructor(
    url: string,
    private readonly pools: number,
  ) {
    this.subscriber = new Redis(url);
  }

  async start(): Promise<void> {
    const channels = Array.from(
      { length: this.pools },
      (_, pool) => `${KEY_PREFIX}:{p:${pool}}:written`,
    );
    this.subscriber.on('message', (channel: string, message: string) => {
      const pool = Number(/\{p:(\d+)\}/.exec(channel)?.[1]);
      const token = message.slice(0, message.indexOf('\n'));
      const write = { fence: Number(token), at: Date.now() };
      this.latest.set(pool, write);
      this.sinceMark.get(pool)?.push(write);
    });
    await this.subscriber.subscribe(...channels);
  }

  async everyPoolWritten(seconds: number): Promise<void> {
    await waitFor(() => this.latest.size === this.pools, {
      timeoutMs: seconds * 1000,
      message: 'scale: every pool has a fenced write',
    });
  }

  /** From now on, keep every write. */
  mark(): void {
    this.markedLatest = new Map(this.latest);
    this.sinceMark = new Map(
      Array.from({ length: this.pools }, (_, pool) => [
        pool,
        [] as { fence: number; at: number }[],
      ]),
    );
  }

  /**
   * For each of `pools`, once a write with a newer token arrived: the previous owner's last
   * write (before the mark, or after it with the old token) and the new owner's first.
   */
  async gaps(pools: number[], seconds: number) {
    await waitFor(
      () =>
        pools.every((pool) =>
          this.sinceMark
            .get(pool)!
            .some((w) => w.fence > (this.markedLatest.get(pool)?.fence ?? Infinity)),
        ),
      { timeoutMs: seconds * 1000, message: 'scale: every moved pool written by its new owner' },
    );
    return pools.map((pool) => {
      const old = this.markedLatest.get(pool)!;
      const writes = this.sinceMark.get(pool)!;
      const firstNew = writes.find((w) => w.fence > old.fence)!;
      const lastOld = writes.filter((w) => w.fence === old.fence && w.at < firstNew.at).at(-1);
      const lastOldAt = lastOld?.at ?? old.at;
      return { pool, gapMs: firstNew.at - lastOldAt, firstNewAt: firstNew.at };
    });
  }

  async stop(): Promise<void> {
    this.subscriber.disconnect();
  }
}

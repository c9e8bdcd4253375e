/**
 * What the cluster tests that run a seeded workload share: each test gets a cluster of its
 * own under a seed it reports (CLUSTER_SEED replays one), the processes' logs are printed when
 * it fails, and the summary it returns is printed and annotated. twoCoresUnderLoad is the start
 * of the crash, pause and random-workload tests: a server, two cores and a gateway, settled,
 * with a workload run on them whose badges the cores stored.
 */
import { mulberry32 } from '@bubble/protocol';
import type { RoleProcess } from '@bubble/test-utils';
import { afterEach, beforeAll, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { Cluster, type ClusterOptions } from './harness.js';
import { FeedWorkload, ids } from './workload.js';

export interface ClusterRun {
  c: Cluster;
  seed: number;
  /** Printed before the processes' logs when the test fails. */
  notes: string[];
}

export interface ClusterTestOptions extends ClusterOptions {
  /** The summary's tag in the test output. */
  tag: string;
  timeoutMs: number;
}

/**
 * Registers the build and the closing of each test's cluster in the calling describe block;
 * returns how to declare a test there. Its body returns the summary (after the seed).
 */
export function useClusterTests(): (
  name: string,
  options: ClusterTestOptions,
  body: (run: ClusterRun) => Promise<string>,
) => void {
  let cluster: Cluster | undefined;
  beforeAll(() => buildOnce(), 300_000);
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });
  return (name, { tag, timeoutMs, ...options }, body) => {
    it(
      name,
      async (ctx) => {
        const seed = Number(process.env.CLUSTER_SEED ?? Date.now() % 1_000_000);
        const c = (cluster = await Cluster.start(options));
        const notes: string[] = [];
        try {
          const summary = `seed ${seed}; ${await body({ c, seed, notes })}`;
          console.log(`[${tag}] ${summary}`);
          await ctx.annotate(summary);
        } catch (err) {
          console.error([`seed ${seed}`, ...notes, c.describe()].join('\n'));
          throw err;
        }
      },
      timeoutMs,
    );
  };
}

export interface LoadOptions {
  /** Share of the users online. */
  online: number;
  /** Random operations per lane before the test proper. */
  ops: number;
  users?: number;
  authors?: number;
  /**
   * End-user reads in the workload (default false: a read makes the gateway write the badge
   * too, and these tests are about the cores).
   */
  clientReads?: boolean;
  /** Environment of the first core (e.g. its REDIS_URL through a proxy). */
  firstCoreEnv?: Record<string, string>;
}

/**
 * A server, two cores and a gateway, the pools settled over the cores and the change messages
 * recorded; a seeded workload run on them, swept and stored.
 */
export async function twoCoresUnderLoad(
  { c, seed }: ClusterRun,
  options: LoadOptions,
): Promise<{ cores: [RoleProcess, RoleProcess]; work: FeedWorkload }> {
  const [, first, second] = await Promise.all([
    c.spawn('server'),
    c.spawn('core', options.firstCoreEnv),
    c.spawn('core'),
    c.spawn('gateway'),
  ]);
  const cores: [RoleProcess, RoleProcess] = [first, second];
  await c.waitSettled(cores, c.settleMs);
  await c.subscribeChanges();
  const work = new FeedWorkload(c, {
    users: ids('u', options.users ?? 50),
    authors: ids('a', options.authors ?? 20),
    rand: mulberry32(seed),
    clientReads: options.clientReads ?? false,
  });
  await work.setup(options.online);
  await work.run(options.ops);
  await work.expectWrittenBy(cores);
  return { cores, work };
}

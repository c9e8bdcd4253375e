import type { RoleProcess } from '@bubble/test-utils';
import { processRssBytes } from './children.js';
import { machineFacts, sleep, startGateway } from './live-stack.js';
import { perSecond, SdkFleet } from './sdk-fleet.js';
import {
  platformCall,
  SDK_STACK_DEFAULTS,
  startSdkStack,
  wrongBadges,
  type SdkStackOptions,
} from './sdk-stack.js';

export interface StormOptions extends SdkStackOptions {
  /** SDK clients (one user each), spread over `drivers` processes. */
  clients: number;
  /** Every dropped client must be back within this. */
  recoveryMs: number;
}

export const STORM_DEFAULTS: StormOptions = {
  ...SDK_STACK_DEFAULTS,
  clients: 10_000,
  authors: 200,
  recoveryMs: 60_000,
};

/** One storm: the clients of one gateway dropped at once, and their way back to the other. */
export interface StormFigures {
  dropped: number;
  recoveryMs: number;
  reconnects: number;
  attempts: number;
  peakPerSecond: number;
  /** Attempts per second over the span of the first 99 % of them. */
  meanPerSecond: number;
  attemptsPerSecond: number[];
  backsPerSecond: number[];
  refused: Record<string, number>;
  closedEarly: Record<string, number>;
  errors: Record<string, number>;
  survivorRssMb: number;
  /** Clients whose badge differed from the stored one once posts stopped (0 within 30 s). */
  wrongBadges: number;
  /** The bars: back within recoveryMs, peak ≤ 2 × mean, refusals only 429/503 or 1013. */
  recovered: boolean;
  spread: boolean;
  refusedAtTheDoor: boolean;
}

/**
 * `bench storm` (issue 19; docs/security.md "Reconnect storm"): `clients` real SDK clients
 * (BubbleClient with its own spread and full-jitter backoff, in driver processes) on `bubble
 * server`, `bubble core` and gateways A and B of their own redis-server. Every client knows both
 * gateways and starts on A. A drains (SIGTERM: its paced 1001s), and the clients move to B; A is
 * started again on its port, B is killed with SIGKILL, and they move to A. Posts keep coming
 * through the survivor. Per storm: recovery time, attempts and reconnections per second (the
 * clients' clocks), what was refused and how, the survivor's RSS, and every client's badge
 * against the stored one once posts stop.
 */
export async function benchStorm(partial: Partial<StormOptions> = {}) {
  const options = { ...STORM_DEFAULTS, ...partial };
  const { log } = options;
  const stack = await startSdkStack('storm', options.clients, options);
  const { redis, children, users, authors, authorOf, secrets } = stack;
  let fleet: SdkFleet | undefined;
  try {
    const gateway = (port?: number) =>
      startGateway({ redisUrl: redis.url, pools: options.pools, secrets, log, port }).then(
        (child) => (children.push(child), child),
      );
    let gatewayA = await gateway();
    const gatewayB = await gateway();
    const platform = (target: RoleProcess) => platformCall(target.url, secrets.apiKey);
    await waitSwept(() => platform(gatewayA)('GET', '/v1/cluster'));

    let postSeq = 0;
    let postErrors = 0;
    const post = async (target: RoleProcess, authorIndexes: number[]) => {
      const posts = authorIndexes.map((k) => ({
        author: authors[k]!,
        id: `p${++postSeq}`,
        ts: Date.now() - 1000,
      }));
      if ((await platform(target)('POST', '/v1/posts', { posts })).status !== 202) postErrors++;
    };
    // Every author has posted: badges start non-zero.
    await post(
      gatewayA,
      authors.map((_, k) => k),
    );

    fleet = await SdkFleet.start({
      processes: options.drivers,
      users,
      authorOf,
      log,
      client: {
        urls: [gatewayA.url, gatewayB.url],
        perAddress: options.perAddress,
        jwtSecret: secrets.jwtSecret,
      },
    });
    const clients = fleet;
    const connectDeadline = performance.now() + 600_000;
    let lastLog = performance.now();
    while ((await clients.progress()).open < users.length) {
      if (performance.now() > connectDeadline)
        throw new Error('storm: the clients never all connected');
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`storm: connecting, ${(await clients.progress()).open} open`);
      }
      await sleep(500);
    }
    log(`storm: ${users.length} clients open`);

    /** Drops every client of gateway `dropped` (0: A, 1: B) with `drop`, back to `survivor`. */
    const storm = async (
      label: string,
      survivor: RoleProcess,
      dropped: number,
      drop: () => Promise<void>,
    ): Promise<StormFigures> => {
      await clients.mark();
      const before = await clients.progress();
      const onDropped = before.onGateway[dropped]!;
      log(`storm ${label}: ${onDropped} of ${before.open} open clients on the dropped gateway`);
      let posting = true;
      const posts = (async () => {
        while (posting) {
          await post(survivor, [
            Math.floor(Math.random() * options.authors),
            Math.floor(Math.random() * options.authors),
          ]);
          await sleep(200);
        }
      })();
      let rssPeak = 0;
      const sampler = setInterval(() => {
        void processRssBytes(survivor.pid).then((rss) => (rssPeak = Math.max(rssPeak, rss ?? 0)));
      }, 250);
      const droppedAt = Date.now();
      const deadline = performance.now() + options.recoveryMs + 30_000;
      try {
        await drop();
        let logged = performance.now();
        for (;;) {
          const p = await clients.progress();
          if (p.open === users.length && p.lost >= onDropped && p.back === p.lost) break;
          if (performance.now() > deadline) {
            throw new Error(`storm ${label}: not every client came back: ${JSON.stringify(p)}`);
          }
          if (performance.now() - logged > 5000) {
            logged = performance.now();
            log(`storm ${label}: ${JSON.stringify(p)}`);
          }
          await sleep(250);
        }
      } finally {
        clearInterval(sampler);
        posting = false;
        await posts;
      }
      const w = await clients.window();
      const recoveryMs = w.backs[w.backs.length - 1]! - droppedAt;
      // Reconnects = the SDK's reconnection attempts (what its spread and jitter shape), per
      // second of the clients' clocks from the first attempt on. The mean is over the span of
      // the first 99 % of the attempts: a few clients retrying seconds later (a reset
      // connection) would otherwise stretch the span, shrink the mean and make a herd out of a
      // flat spread.
      const firstAttempt = w.attempts[0] ?? droppedAt;
      const bulk = Math.max(1, Math.ceil(0.99 * w.attempts.length));
      const bulkSeconds = Math.max(
        1,
        ((w.attempts[bulk - 1] ?? firstAttempt) - firstAttempt) / 1000,
      );
      const attemptsPerSecond = perSecond(w.attempts, firstAttempt);
      const peakPerSecond = Math.max(0, ...attemptsPerSecond);
      const meanPerSecond = Math.round(bulk / bulkSeconds);
      // Every client back holds the badge the platform sees, once the last pushes are out.
      const toSurvivor = platform(survivor);
      let wrong = await wrongBadges(clients, toSurvivor);
      const quietDeadline = performance.now() + 30_000;
      while (wrong.length > 0 && performance.now() < quietDeadline) {
        await sleep(1000);
        wrong = await wrongBadges(clients, toSurvivor);
      }
      const refusedAtTheDoor =
        Object.keys(w.refused).every((status) => status === '429' || status === '503') &&
        // 1005/1006: the client's own connect timeout, or a connection reset under load.
        Object.keys(w.closedEarly).every((code) => ['1013', '1001', '1005', '1006'].includes(code));
      const figures: StormFigures = {
        dropped: onDropped,
        recoveryMs: Math.round(recoveryMs),
        reconnects: w.backs.length,
        attempts: w.attempts.length,
        peakPerSecond,
        meanPerSecond,
        attemptsPerSecond,
        backsPerSecond: perSecond(w.backs, firstAttempt),
        refused: w.refused,
        closedEarly: w.closedEarly,
        errors: w.errors,
        survivorRssMb: Math.round(rssPeak / 2 ** 20),
        wrongBadges: wrong.length,
        recovered: recoveryMs <= options.recoveryMs && w.backs.length >= onDropped,
        spread: peakPerSecond <= 2 * meanPerSecond,
        refusedAtTheDoor,
      };
      log(`storm ${label}: ${JSON.stringify(figures)}`);
      return figures;
    };

    // 1. The drain: SIGTERM → paced 1001s to A's clients; A exits cleanly.
    const drainedA = gatewayA;
    const drain = await storm('drain', gatewayB, 0, async () => drainedA.signal('SIGTERM'));
    const drainExit = await drainedA.waitExit(30_000);

    // 2. A again on its port; then kill -9 of B, which holds every client.
    const portA = Number(new URL(drainedA.url).port);
    gatewayA = await gateway(portA);
    const kill = await storm('kill', gatewayA, 1, async () => void (await gatewayB.kill()));

    const others = children.filter((c) => c !== drainedA && c !== gatewayB);
    return {
      scenario: 'storm',
      clients: options.clients,
      drain,
      kill,
      drainExitCode: drainExit.code,
      killSignal: gatewayB.exit?.signal ?? null,
      crashed: others.filter((c) => !c.alive).map((c) => c.name),
      postErrors,
      machine: machineFacts(),
    };
  } finally {
    await fleet?.close();
    await stack.stop();
  }
}

/** Waits until every pool has an owner that reported a sweep: posts are pushed from then on. */
async function waitSwept(status: () => Promise<{ status: number; json: unknown }>): Promise<void> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const answer = await status();
    const cluster = answer.json as {
      pools: Array<{ owner: string | null }>;
      sweeps: Array<{ node: string }>;
    } | null;
    if (cluster) {
      const swept = new Set(cluster.sweeps.map((s) => s.node));
      if (cluster.pools.every((p) => p.owner !== null && swept.has(p.owner))) return;
    }
    if (performance.now() > deadline) throw new Error('storm: the pools never got swept');
    await sleep(200);
  }
}

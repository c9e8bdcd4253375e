import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { RedisWebhookQueue } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import { startBenchRedis } from './bench-redis.js';
import type { BenchOptions } from './bench-options.js';
import { forkDriver, type DriverHandle } from './driver-process.js';
import { RawHttpConnection, httpRequest, type RawResponse } from './http-client.js';
import { mintJwt } from './identity.js';
import { logProfiles } from './profile-summary.js';
import {
  benchSecrets,
  cpuShares,
  cpuSnapshot,
  machineFacts,
  round2,
  sleep,
  startProfiledGateway,
  type BenchSecrets,
} from './live-stack.js';
import { redisCpuSeconds } from './redis-probe.js';
import { SyncReceiver } from './sync-receiver.js';
import { percentile } from './workload.js';
import type { WsConnectResult } from './ws-driver.js';

export interface SyncOptions extends BenchOptions {
  /** Users, each with a live desktop socket and an offline phone (the receiver). */
  users: number;
  /** Reads on the desktops per second, one per user, in a steady stream. */
  readsPerSec: number;
  /** BUBBLE_WEBHOOK_MIN_INTERVAL_MS of the gateway: the bar is syncP99Ms ≤ it + 1000. */
  minIntervalMs: number;
  /** Processes holding the desktop sockets, and their connection pacing (as `connections`). */
  drivers: number;
  perAddress: number;
  connectConcurrency: number;
  connectSeconds: number;
  /** Longest wait, after the last read, for the last correction. */
  drainTimeoutMs: number;
  pools: number;
  profileDir: string | undefined;
}

export const SYNC_DEFAULTS: SyncOptions = {
  users: 10_000,
  readsPerSec: 500,
  minIntervalMs: 1000,
  drivers: 2,
  perAddress: 40,
  connectConcurrency: 200,
  connectSeconds: 300,
  drainTimeoutMs: 30_000,
  pools: 100,
  profileDir: undefined,
  log: () => {},
};

const HTTP_CONNECTIONS = 8;
/** A request chunk of the set-up: messages, and the badges read at the end. */
const CHUNK = 400;

/**
 * bench.md "sync": `users` users each in a pair conversation, away: a message each, delivered to
 * their phone (the receiver in this process) by one `bubble gateway`. Then each opens a desktop
 * (an authenticated WebSocket, held by driver processes) and reads the conversation there at a
 * steady rate (`POST /v1/badge/read` with their token): the time from each read's answer to the
 * delivery that sets their phone's icon to 0 is the sync latency. `lost`: users whose phone, once
 * drained, does not show their badge's total (`GET /v1/users/{user}/badge`).
 */
export async function benchSync(partial: Partial<SyncOptions> = {}) {
  const options = { ...SYNC_DEFAULTS, ...partial };
  const { log } = options;
  const stamp = `${Date.now()}-sync`;
  const loadBefore = loadavg();
  const users = Array.from({ length: options.users }, (_, i) => `u${i}`);
  const pairOf = (i: number) => `c${i}`;
  const secret = randomBytes(32).toString('base64url');
  const receiver = new SyncReceiver(secret);
  const redis = await startBenchRedis(options);
  let gateway: RoleProcess | undefined;
  const connections: RawHttpConnection[] = [];
  const drivers: DriverHandle[] = [];
  let figures: Record<string, unknown>;
  try {
    for (let i = 0; i < users.length; i += 500) {
      const ids = users.slice(i, i + 500).map((_, k) => i + k);
      await Promise.all(
        ids.map((n) => redis.service.replaceMembers(pairOf(n), [users[n]!, `f${n}`])),
      );
    }
    const secrets = benchSecrets();
    gateway = await startProfiledGateway(redis.url, secrets, options, stamp, {
      env: {
        BUBBLE_WEBHOOK_URL: await receiver.listen(),
        BUBBLE_WEBHOOK_SECRET: secret,
        BUBBLE_WEBHOOK_SOURCES: 'conversations',
        BUBBLE_WEBHOOK_MIN_INTERVAL_MS: String(options.minIntervalMs),
      },
    });
    for (let c = 0; c < HTTP_CONNECTIONS; c++) {
      connections.push(await RawHttpConnection.connect('127.0.0.1', gateway.port));
    }
    const call = (k: number, request: Buffer | string) =>
      connections[k % connections.length]!.request(request);

    // Away: a message each, and every phone shows 1.
    const phonesStarted = performance.now();
    await inChunks(users.length, async (i) => {
      const path = `/v1/conversations/${pairOf(i)}/messages`;
      const body = JSON.stringify({ seq: 1, from: `f${i}` });
      expectStatus(
        await call(i, httpRequest('POST', path, { 'X-Api-Key': secrets.apiKey }, body)),
        202,
        path,
      );
    });
    await until(
      () => users.every((u) => receiver.icon.get(u) === 1),
      120_000,
      'every phone shows 1',
    );
    log(
      `sync: ${users.length} phones show 1 after ${Math.round(performance.now() - phonesStarted)} ms`,
    );

    // The desktops: one authenticated socket per user, live.
    const per = Math.ceil(users.length / options.drivers);
    const results = await Promise.all(
      Array.from({ length: options.drivers }, (_, d) => {
        const driver = forkDriver(new URL('./ws-driver.js', import.meta.url), `desktops${d}`, log);
        drivers.push(driver);
        return driver.call<WsConnectResult>('connect', {
          url: `ws://127.0.0.1:${gateway!.port}/v1/ws`,
          perAddress: options.perAddress,
          jwtSecret: secrets.jwtSecret,
          users: users.slice(d * per, (d + 1) * per),
          firstIndex: d * per,
          concurrency: Math.ceil(options.connectConcurrency / options.drivers),
          seconds: options.connectSeconds,
        });
      }),
    );
    const connected = results.reduce((n, r) => n + r.connected, 0);
    if (connected !== users.length)
      throw new Error(`sync: ${connected} desktops of ${users.length}`);
    const presence = new RedisWebhookQueue(redis.store.redis, redis.store.keys);
    await until(
      async () => (await presence.onlineAmong(users)).every(Boolean),
      60_000,
      'desktops online',
    );
    log(`sync: ${connected} desktops online`);

    // Reads on the desktops at a steady rate; each answer's time against its phone's correction.
    receiver.watch(0);
    const pids = { gateway: gateway.pid, bench: process.pid };
    const cpuBefore = await cpuSnapshot(pids);
    const redisBefore = await redisCpuSeconds(redis.admin);
    const answeredAt = new Float64Array(users.length).fill(NaN);
    const failedReads: Record<string, number> = {};
    const readsStarted = performance.now();
    let sent = 0;
    while (sent < users.length) {
      const due = Math.min(
        users.length,
        Math.floor(((performance.now() - readsStarted) / 1000) * options.readsPerSec) + 1,
      );
      for (; sent < due; sent++) {
        const i = sent;
        const token = mintJwt(secrets.jwtSecret, users[i]!, 3600);
        const body = JSON.stringify({ scope: 'conversation', id: pairOf(i) });
        connections[i % connections.length]!.send(
          httpRequest('POST', '/v1/badge/read', { Authorization: `Bearer ${token}` }, body),
          (response) => {
            if (response.status === 200) answeredAt[i] = performance.now();
            else failedReads[response.status] = (failedReads[response.status] ?? 0) + 1;
          },
        );
      }
      await sleep(5);
    }
    const readSeconds = (performance.now() - readsStarted) / 1000;
    const cpu = cpuShares(cpuBefore, await cpuSnapshot(pids));
    cpu['redis-server'] = round2(
      ((await redisCpuSeconds(redis.admin)) - redisBefore) / readSeconds,
    );
    await until(
      () => users.every((u) => receiver.correctedAt.has(u)),
      options.minIntervalMs + options.drainTimeoutMs,
      'every phone corrected',
    ).catch((err: Error) => log(`sync: ${err.message}`));
    await until(() => connections.every((c) => c.inFlight === 0), 10_000, 'reads answered');

    const syncMs: number[] = [];
    users.forEach((u, i) => {
      const at = receiver.correctedAt.get(u);
      if (at !== undefined && !Number.isNaN(answeredAt[i]!))
        syncMs.push(Math.max(0, at - answeredAt[i]!));
    });
    syncMs.sort((a, b) => a - b);
    const corrections = [...receiver.correctedAt.values()];
    const lastCorrection = corrections.length > 0 ? Math.max(...corrections) : readsStarted;
    const truth = await totals(users, secrets, call);
    const lost = users.filter((u) => receiver.icon.get(u) !== truth.get(u)).length;
    const syncP99Ms = Math.round(percentile(syncMs, 99));
    figures = {
      scenario: 'sync',
      syncP50Ms: Math.round(percentile(syncMs, 50)),
      syncP99Ms,
      syncMaxMs: Math.round(syncMs.at(-1) ?? 0),
      deliveriesPerSec: Math.round(
        corrections.length / Math.max(0.001, (lastCorrection - readsStarted) / 1000),
      ),
      lost,
      bar: {
        syncP99MsMax: options.minIntervalMs + 1000,
        met: syncP99Ms <= options.minIntervalMs + 1000 && lost === 0,
      },
      reads: {
        sent,
        answered: answeredAt.filter((t) => !Number.isNaN(t)).length,
        failed: failedReads,
        perSec: round2(sent / readSeconds),
      },
      corrected: corrections.length,
      // Cores used while the reads went on: each read's answer and its phone's correction.
      cpuCores: cpu,
      gatewayCpuUsPerRead:
        cpu.gateway === null || cpu.gateway === undefined
          ? null
          : Math.round((cpu.gateway! * readSeconds * 1e6) / sent),
      receiver: {
        requests: receiver.requests,
        userDeliveries: receiver.userDeliveries,
        faults: receiver.faults,
      },
      minIntervalMs: options.minIntervalMs,
      workload: { users: options.users, readsPerSec: options.readsPerSec },
      loadAverage: { before: loadBefore.map(round2), after: loadavg().map(round2) },
      machine: machineFacts(),
    };
    log(
      `sync: p50 ${String(figures.syncP50Ms)} ms, p99 ${syncP99Ms} ms, ${String(figures.deliveriesPerSec)} deliveries/s, lost ${lost}`,
    );
  } finally {
    for (const connection of connections) connection.close();
    for (const driver of drivers) await driver.stop().catch(() => {});
    await gateway?.stop().catch(() => {});
    await receiver.close();
    await redis.stop();
  }
  if (options.profileDir) figures.profiles = await logProfiles(options.profileDir, stamp, log);
  return figures;
}

async function inChunks(n: number, each: (i: number) => Promise<void>): Promise<void> {
  for (let first = 0; first < n; first += CHUNK) {
    const ids = Array.from({ length: Math.min(CHUNK, n - first) }, (_, k) => first + k);
    await Promise.all(ids.map(each));
  }
}

function expectStatus(response: RawResponse, status: number, what: string): void {
  if (response.status !== status) {
    throw new Error(`sync: ${what} answered ${response.status}: ${response.body.toString()}`);
  }
}

/** Every user's badge total as the store has it now, through the platform API. */
async function totals(
  users: string[],
  secrets: BenchSecrets,
  call: (k: number, request: Buffer | string) => Promise<RawResponse>,
): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  await inChunks(users.length, async (i) => {
    const path = `/v1/users/${users[i]}/badge`;
    const response = await call(i, httpRequest('GET', path, { 'X-Api-Key': secrets.apiKey }));
    expectStatus(response, 200, path);
    totals.set(users[i]!, (JSON.parse(response.body.toString()) as { total: number }).total);
  });
  return totals;
}

async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`sync: not within ${timeoutMs} ms: ${what}`);
    await sleep(20);
  }
}

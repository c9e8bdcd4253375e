import { randomBytes } from 'node:crypto';

import { mulberry32 } from '@bubble/protocol';
import { RedisKeys } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import type { Redis } from 'ioredis';
import { startBenchRedis } from './bench-redis.js';
import type { BenchOptions } from './bench-options.js';
import { RawHttpConnection, httpRequest, type RawResponse } from './http-client.js';
import { gatewaySeries } from './ingest-stream.js';
import { logProfiles } from './profile-summary.js';
import {
  KEY_PREFIX,
  benchSecrets,
  cpuShares,
  cpuSnapshot,
  machineFacts,
  round2,
  sleep,
  startProfiledGateway,
} from './live-stack.js';
import { redisCpuSeconds } from './redis-probe.js';
import { WebhookReceiver } from './webhook-receiver.js';

export interface WebhookOptions extends BenchOptions {
  /** Offline users, every one in a pair conversation, some in small and large groups too. */
  users: number;
  /** Small groups (besides the pairs), each of 3 to 8 members drawn at random. */
  smallGroups: number;
  /** Member counts of the large groups, members drawn at random. */
  largeGroups: number[];
  /** Messages per second to pairs and small groups (one POST each), drawn uniformly. */
  messagesPerSec: number;
  /** Each large group gets one message this often. */
  largeGroupEveryMs: number;
  /** BUBBLE_WEBHOOK_MIN_INTERVAL_MS of the gateway. */
  minIntervalMs: number;
  /** Phase one: the receiver answers 200. Phase two: `failShare` of requests get 503. */
  okSeconds: number;
  failingSeconds: number;
  failShare: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** BUBBLE_WEBHOOK_CONCURRENCY: requests the gateway has in flight at once. */
  concurrency: number;
  /** Longest wait, once messages stop, for every user's last badge to reach the receiver. */
  drainTimeoutMs: number;
  pools: number;
  seed: number;
  profileDir: string | undefined;
}

export const WEBHOOK_DEFAULTS: WebhookOptions = {
  users: 10_000,
  smallGroups: 1000,
  largeGroups: [6000, 3000],
  messagesPerSec: 200,
  largeGroupEveryMs: 250,
  minIntervalMs: 1000,
  okSeconds: 15,
  failingSeconds: 15,
  failShare: 0.1,
  retryBaseMs: 100,
  retryMaxMs: 2000,
  concurrency: 8,
  drainTimeoutMs: 120_000,
  pools: 100,
  seed: 23,
  profileDir: undefined,
  log: () => {},
};

/** Requests the driver keeps in flight per connection before it skips a tick. */
const MAX_IN_FLIGHT = 256;
const DRIVER_CONNECTIONS = 4;

interface Conversation {
  id: string;
  members: string[];
  seq: number;
}

/**
 * bench.md "webhook": `users` offline users (no connection ever) in pair conversations, small
 * groups and large groups, messages posted at a steady rate through
 * `POST /v1/conversations/{id}/messages`; one `bubble gateway` with BUBBLE_WEBHOOK_URL set
 * delivers their badges to a receiver in this process, which checks every request's signature
 * and idempotency key and answers 200 for `okSeconds`, then 503 to `failShare` of the requests
 * (a seeded draw) for `failingSeconds`, and keeps failing that share while the gateway drains.
 * `lost` counts users whose last accepted delivery (or none) differs from their badge read at
 * the end (`GET /v1/users/{user}/badge`): what their phone would show wrongly.
 */
export async function benchWebhook(partial: Partial<WebhookOptions> = {}) {
  const options = { ...WEBHOOK_DEFAULTS, ...partial };
  const { log } = options;
  const stamp = `${Date.now()}-webhook`;
  const random = mulberry32(options.seed);
  const users = Array.from({ length: options.users }, (_, i) => `u${i}`);
  const conversations = buildConversations(users, options, random);
  const small = conversations.filter((c) => c.id[0] !== 'g');
  const large = conversations.filter((c) => c.id[0] === 'g');
  const secret = randomBytes(32).toString('base64url');
  const receiver = new WebhookReceiver(secret, options.minIntervalMs, mulberry32(options.seed ^ 1));
  const redis = await startBenchRedis(options);
  const { service, admin } = redis;
  const keys = new RedisKeys(KEY_PREFIX, options.pools);
  let gateway: RoleProcess | undefined;
  const connections: RawHttpConnection[] = [];
  let figures: Record<string, unknown>;
  try {
    for (let i = 0; i < conversations.length; i += 500) {
      await Promise.all(
        conversations.slice(i, i + 500).map((c) => service.replaceMembers(c.id, c.members)),
      );
    }
    log(
      `webhook: ${conversations.length} conversations of ${users.length} users stored ` +
        `(${small.length} pairs and small groups, large groups of ${options.largeGroups.join(', ')})`,
    );
    const url = await receiver.listen();
    const secrets = benchSecrets();
    gateway = await startProfiledGateway(redis.url, secrets, options, stamp, {
      env: {
        BUBBLE_WEBHOOK_URL: url,
        BUBBLE_WEBHOOK_SECRET: secret,
        BUBBLE_WEBHOOK_SOURCES: 'conversations',
        BUBBLE_WEBHOOK_MIN_INTERVAL_MS: String(options.minIntervalMs),
        BUBBLE_WEBHOOK_RETRY_BASE_MS: String(options.retryBaseMs),
        BUBBLE_WEBHOOK_RETRY_MAX_MS: String(options.retryMaxMs),
        BUBBLE_WEBHOOK_CONCURRENCY: String(options.concurrency),
      },
    });
    for (let c = 0; c < DRIVER_CONNECTIONS; c++) {
      connections.push(await RawHttpConnection.connect('127.0.0.1', gateway.port));
    }
    const pids = { gateway: gateway.pid, bench: process.pid };

    // Messages at a steady rate; every member but the sender has a changed badge.
    let changes = 0;
    let messagesAccepted = 0;
    let skippedTicks = 0;
    const statuses: Record<string, number> = {};
    const changedAt = new Float64Array(users.length).fill(-Infinity);
    const userIndex = new Map(users.map((u, i) => [u, i]));
    let demand = 0;
    let next = 0;
    const send = (conversation: Conversation) => {
      const connection = connections[next++ % connections.length]!;
      if (connection.inFlight >= MAX_IN_FLIGHT) return false;
      const from = conversation.members[Math.floor(random() * conversation.members.length)]!;
      const seq = ++conversation.seq;
      const now = performance.now();
      for (const member of conversation.members) {
        if (member === from) continue;
        changes++;
        const u = userIndex.get(member)!;
        // Users changed at least once per interval: what the rule lets through at most.
        if (now - changedAt[u]! >= options.minIntervalMs) {
          changedAt[u] = now;
          demand++;
        }
      }
      connection.send(
        httpRequest(
          'POST',
          `/v1/conversations/${conversation.id}/messages`,
          { 'X-Api-Key': secrets.apiKey },
          JSON.stringify({ seq, from }),
        ),
        (response: RawResponse) => {
          statuses[response.status] = (statuses[response.status] ?? 0) + 1;
          if (response.status === 202) messagesAccepted++;
        },
      );
      return true;
    };
    const drive = async (seconds: number) => {
      const started = performance.now();
      const endsAt = started + seconds * 1000;
      let smallSent = 0;
      let largeSent = 0;
      while (performance.now() < endsAt) {
        const elapsed = performance.now() - started;
        const smallDue = Math.floor((elapsed / 1000) * options.messagesPerSec);
        for (; smallSent < smallDue; smallSent++) {
          if (!send(small[Math.floor(random() * small.length)]!)) {
            skippedTicks++;
            smallSent = smallDue;
            break;
          }
        }
        const largeDue = Math.floor(elapsed / options.largeGroupEveryMs) + 1;
        for (; largeSent < largeDue; largeSent++) for (const group of large) send(group);
        await sleep(10);
      }
      return (performance.now() - started) / 1000;
    };
    const phase = async (label: string, seconds: number, failShare: number) => {
      receiver.startPhase(label, failShare);
      const changesBefore = changes;
      const demandBefore = demand;
      const cpuBefore = await cpuSnapshot(pids);
      const redisBefore = await redisCpuSeconds(admin);
      // The backlog behind the receiver: jobs not yet expanded, users waiting for a delivery.
      let sampling = true;
      let jobsLagMax = 0;
      let queueUsersMax = 0;
      const sampler = (async () => {
        while (sampling) {
          const jobs = await jobsBacklog(admin, keys.webhook('jobs'));
          jobsLagMax = Math.max(jobsLagMax, jobs.lag + jobs.pending);
          const queued = (await gatewaySeries(gateway!.url, 'bubble_webhook_queue_users'))
            .bubble_webhook_queue_users;
          queueUsersMax = Math.max(queueUsersMax, queued ?? 0);
          await sleep(500);
        }
      })();
      const elapsed = await drive(seconds);
      sampling = false;
      await sampler;
      const cpu = cpuShares(cpuBefore, await cpuSnapshot(pids));
      cpu['redis-server'] = round2(((await redisCpuSeconds(admin)) - redisBefore) / elapsed);
      const stats = receiver.phaseStats();
      const figures = {
        deliveriesPerSec: Math.round(stats.userDeliveries / elapsed),
        demandPerSec: Math.round((demand - demandBefore) / elapsed),
        changes: changes - changesBefore,
        jobsBacklogMax: jobsLagMax,
        queueUsersMax,
        ...stats,
        seconds: round2(elapsed),
        cpuCores: cpu,
      };
      log(`webhook: ${label} ${JSON.stringify(figures)}`);
      return figures;
    };
    log(
      `webhook: messages at ${options.messagesPerSec}/s, large groups every ${options.largeGroupEveryMs} ms`,
    );
    const ok = await phase('ok', options.okSeconds, 0);
    const failing = await phase('failing', options.failingSeconds, options.failShare);

    // Drain: every user's last accepted badge must become the badge the store holds.
    receiver.startPhase('drain', options.failShare);
    const stoppedAt = performance.now();
    await waitUntil(() => connections.every((c) => c.inFlight === 0), 10_000);
    const truth = await readBadges(connections, users, secrets.apiKey);
    let lostUsers = users.filter((u) => !receiver.shows(u, truth.get(u)!));
    const deadline = stoppedAt + options.drainTimeoutMs;
    // Until every phone is right, or nothing more can come: the gateway's queue empty, nothing
    // retrying, the receiver idle, twice in a row a second apart.
    let quietChecks = 0;
    let checkedAt = performance.now();
    while (lostUsers.length > 0 && performance.now() < deadline && quietChecks < 2) {
      await sleep(100);
      lostUsers = lostUsers.filter((u) => !receiver.shows(u, truth.get(u)!));
      if (performance.now() - checkedAt >= 1000) {
        checkedAt = performance.now();
        const queue = await gatewaySeries(gateway.url, 'bubble_webhook_');
        const jobs = await jobsBacklog(admin, keys.webhook('jobs'));
        const idle =
          queue.bubble_webhook_queue_users === 0 &&
          queue.bubble_webhook_retrying === 0 &&
          jobs.lag === 0 &&
          jobs.pending === 0 &&
          checkedAt - receiver.lastRequestAt >= 1000;
        quietChecks = idle ? quietChecks + 1 : 0;
      }
    }
    const drainMs = Math.max(0, Math.round(receiver.lastAcceptedAt - stoppedAt));
    // A missed rise is a message the phone never counted; a missed fall, a read (a member's own
    // message marks the conversation read) the phone never heard of.
    const missedRise = lostUsers.filter((u) => {
      const shown = receiver.shown(u) ?? {};
      return Object.entries(truth.get(u)!).some(([c, n]) => (shown[c] ?? 0) < n);
    }).length;
    const drain = receiver.phaseStats();
    const total = receiver.totals();
    const metrics = await gatewaySeries(gateway.url, 'bubble_webhook_');
    const deadLetters = await countKey(admin, keys.webhookDead());
    const seconds = ok.seconds + failing.seconds;
    const deliveriesPerSec = Math.round((ok.userDeliveries + failing.userDeliveries) / seconds);
    const allChanges = ok.changes + failing.changes;
    figures = {
      scenario: 'webhook',
      deliveriesPerSec,
      usersPerDelivery: round2(total.userDeliveries / Math.max(1, total.deliveries)),
      coalescedShare: round2(1 - total.userDeliveries / Math.max(1, changes)),
      retriedShare: round2(total.retriedRequests / Math.max(1, total.requests)),
      lost: lostUsers.length,
      lostByKind: { missedRise, missedFallOnly: lostUsers.length - missedRise },
      intervalViolationMs: total.intervalViolationMs,
      minIntervalMs: options.minIntervalMs,
      minGapMs: total.minGapMs,
      demandPerSec: Math.round(
        (ok.demandPerSec * ok.seconds + failing.demandPerSec * failing.seconds) / seconds,
      ),
      changes: allChanges,
      messages: { accepted: messagesAccepted, statuses, skippedTicks },
      drainMs,
      lostSample: lostUsers.slice(0, 5).map((u) => ({
        user: u,
        expected: truth.get(u),
        shown: receiver.shown(u),
      })),
      receiver: total,
      phases: { ok, failing, drain },
      deadLetters,
      gatewayMetrics: metrics,
      workload: {
        users: options.users,
        pairs: Math.floor(options.users / 2),
        smallGroups: options.smallGroups,
        largeGroups: options.largeGroups,
        messagesPerSec: options.messagesPerSec,
        largeGroupEveryMs: options.largeGroupEveryMs,
        failShare: options.failShare,
        concurrency: options.concurrency,
      },
      machine: machineFacts(),
    };
    log(
      `webhook: ${deliveriesPerSec} user deliveries/s, ${figures.usersPerDelivery} users a request, ` +
        `coalesced ${figures.coalescedShare}, retried ${figures.retriedShare}, lost ${lostUsers.length}, ` +
        `interval violation ${total.intervalViolationMs} ms, drained in ${drainMs} ms`,
    );
  } finally {
    for (const connection of connections) connection.close();
    await gateway?.stop().catch(() => {});
    await receiver.close();
    await redis.stop();
  }
  if (options.profileDir) figures.profiles = await logProfiles(options.profileDir, stamp, log);
  return figures;
}

/** Pairs over every user, small groups of 3 to 8, large groups: all drawn with `random`. */
function buildConversations(
  users: string[],
  options: WebhookOptions,
  random: () => number,
): Conversation[] {
  const conversations: Conversation[] = [];
  const shuffled = [...users];
  shuffle(shuffled, random);
  for (let i = 0; i + 1 < shuffled.length; i += 2) {
    conversations.push({ id: `p${i / 2}`, members: [shuffled[i]!, shuffled[i + 1]!], seq: 0 });
  }
  const pick = (n: number) => {
    const chosen = new Set<string>();
    while (chosen.size < Math.min(n, users.length)) {
      chosen.add(users[Math.floor(random() * users.length)]!);
    }
    return [...chosen];
  };
  for (let g = 0; g < options.smallGroups; g++) {
    conversations.push({ id: `s${g}`, members: pick(3 + Math.floor(random() * 6)), seq: 0 });
  }
  options.largeGroups.forEach((size, g) => {
    conversations.push({ id: `g${g}`, members: pick(size), seq: 0 });
  });
  return conversations;
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

/** Every user's `conversations` counts as the store has them now, through the platform API. */
async function readBadges(
  connections: RawHttpConnection[],
  users: string[],
  apiKey: string,
): Promise<Map<string, Record<string, number>>> {
  const badges = new Map<string, Record<string, number>>();
  for (let i = 0; i < users.length; i += 400) {
    const chunk = users.slice(i, i + 400);
    await Promise.all(
      chunk.map(async (user, k) => {
        const response = await connections[k % connections.length]!.request(
          httpRequest('GET', `/v1/users/${user}/badge`, { 'X-Api-Key': apiKey }),
        );
        if (response.status !== 200) {
          throw new Error(`webhook: GET /v1/users/${user}/badge answered ${response.status}`);
        }
        const badge = JSON.parse(response.body.toString()) as {
          conversations?: Record<string, number>;
        };
        badges.set(user, badge.conversations ?? {});
      }),
    );
  }
  return badges;
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('webhook: driver requests unanswered');
    await sleep(10);
  }
}

/** Jobs not yet read by the delivery workers' group, and read but not finished. */
async function jobsBacklog(redis: Redis, key: string): Promise<{ lag: number; pending: number }> {
  const groups = (await redis.xinfo('GROUPS', key).catch(() => [])) as unknown[][];
  let lag = 0;
  let pending = 0;
  for (const flat of groups) {
    for (let i = 0; i + 1 < flat.length; i += 2) {
      if (flat[i] === 'lag') lag += Number(flat[i + 1] ?? 0);
      if (flat[i] === 'pending') pending += Number(flat[i + 1]);
    }
  }
  return { lag, pending };
}

/** Entries of a dead-letter key, whatever its type (0 when absent). */
async function countKey(redis: Redis, key: string): Promise<number> {
  const type = await redis.type(key);
  if (type === 'stream') return redis.xlen(key);
  if (type === 'list') return redis.llen(key);
  if (type === 'zset') return redis.zcard(key);
  if (type === 'hash') return redis.hlen(key);
  return 0;
}

/**
 * Offline delivery wired into the real processes: two `bubble gateway`s on a real redis-server
 * delivering to `bubble webhook-receiver` (which verifies each signature and prints each
 * delivery as a JSON line), one of them killed with -9 in the middle of delivering a large message:
 * the other delivers every offline member. Also /metrics and GET /v1/cluster, the receiver
 * refusing a bad signature and handling a repeated idempotency key once, and `bubble all`
 * without Redis refusing BUBBLE_WEBHOOK_URL before it listens. Runs the built CLI.
 */
import { signWebhook } from '@bubble/events';
import { BubbleProcess, freePort, RoleProcess, uniquePrefix, waitFor } from '@bubble/test-utils';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRoleRig, type RoleRig } from '../support/role-rig.js';
import { httpCall, jsonBody } from '../support/http.js';

const API_KEY = 'webhook-ops-api-key-3b9e1f0c6a2d4e87';
const JWT_SECRET = 'webhook-ops-jwt-secret-a41c7e92d05f3b68';
const SECRET = 'webhook-ops-secret-0f6d2b8e4a1c9735e2b7';
const MEMBERS = 3_000;

let rig: RoleRig;
const running: BubbleProcess[] = [];

beforeAll(async () => {
  rig = await startRoleRig('webhook');
}, 300_000);
afterEach(async () => {
  await Promise.all(running.splice(0).map((run) => run.kill()));
});
afterAll(async () => {
  await rig?.stop();
});

async function startReceiver(): Promise<{ proc: BubbleProcess; url: string }> {
  const port = await freePort();
  const proc = new BubbleProcess({
    args: ['webhook-receiver', '--port', String(port)],
    cwd: rig.cwd,
    env: { BUBBLE_WEBHOOK_SECRET: SECRET },
  });
  running.push(proc);
  await waitFor(() => proc.stderr.includes('listening'), { timeoutMs: 20_000 });
  return { proc, url: `http://127.0.0.1:${port}/push` };
}

/** The receiver's JSON lines: one per delivery. */
function printed(
  proc: BubbleProcess,
): Array<{ id: string; user: string; badge: { total: number } }> {
  return proc.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { id: string; user: string; badge: { total: number } });
}

async function startGateway(env: Record<string, string>, name: string): Promise<RoleProcess> {
  const proc = new RoleProcess({
    role: 'gateway',
    port: await freePort(),
    name,
    cwd: rig.cwd,
    env,
  });
  running.push(proc);
  await proc.listening(30_000);
  await proc.waitHttpOk(`${proc.url}/readyz`, 20_000);
  return proc;
}

async function platform(base: string, method: string, route: string, body?: unknown) {
  const reply = await httpCall(base, method, route, { apiKey: API_KEY, body });
  if (reply.status >= 300) throw new Error(`${method} ${route} answered ${reply.status}`);
  return reply;
}

describe('offline delivery in the processes', () => {
  it('two gateways deliver through bubble webhook-receiver; one killed -9 mid-delivery loses nothing', async () => {
    const receiver = await startReceiver();
    const env = {
      REDIS_URL: rig.redis.url,
      BUBBLE_KEY_PREFIX: uniquePrefix('whp'),
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_SECRET: JWT_SECRET,
      BUBBLE_WEBHOOK_URL: receiver.url,
      BUBBLE_WEBHOOK_SECRET: SECRET,
      BUBBLE_WEBHOOK_MIN_INTERVAL_MS: '60000',
      BUBBLE_WEBHOOK_RETRY_BASE_MS: '50',
      BUBBLE_INGEST_STREAM: '0',
      BUBBLE_INGEST_CLAIM_MS: '1000',
      LOG_LEVEL: 'info',
    };
    const a = await startGateway(env, 'gateway-a');
    const members = Array.from({ length: MEMBERS }, (_, i) => `p${i}`);
    await platform(a.url, 'PUT', '/v1/conversations/big/members', { members });
    await platform(a.url, 'POST', '/v1/conversations/big/messages', { seq: 1, from: 'p0' });
    // a is killed as soon as it has delivered anything: most of the members are still to send.
    await waitFor(() => printed(receiver.proc).length > 0, { timeoutMs: 20_000 });
    await a.kill();
    const deliveredByA = printed(receiver.proc).length;
    // b claims what a held: its job after BUBBLE_INGEST_CLAIM_MS idle, its leased users and
    // batches after their lease (timeout + 10 s).
    const b = await startGateway(env, 'gateway-b');
    // Not the sender: their total stays 0, what their phone shows.
    await waitFor(() => new Set(printed(receiver.proc).map((d) => d.user)).size >= MEMBERS - 1, {
      timeoutMs: 50_000,
      intervalMs: 200,
      message: 'every member delivered',
    });
    const lines = printed(receiver.proc);
    const users = lines.map((d) => d.user);
    expect(new Set(users).size).toBe(MEMBERS - 1);
    expect(lines.every((d) => d.user !== 'p0' && d.badge.total === 1)).toBe(true);
    console.info(`gateway a delivered ${deliveredByA} before its kill, b the rest`);

    const cluster = (await jsonBody(await platform(b.url, 'GET', '/v1/cluster'))) as {
      webhook: { queued: number; retrying: number; deadLetters: number; oldestQueuedMs: number };
    };
    expect(cluster.webhook).toMatchObject({ queued: 0, deadLetters: 0 });
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    for (const name of [
      'bubble_webhook_deliveries_total',
      'bubble_webhook_requests_total',
      'bubble_webhook_queue_users',
      'bubble_webhook_oldest_queued_seconds',
      'bubble_webhook_retrying',
    ]) {
      expect(metrics).toContain(name);
    }
    expect(metrics).toMatch(/bubble_webhook_deliveries_total\{outcome="sent"\} \d+/);
  }, 120_000);

  it('the receiver refuses a bad signature and handles a repeated idempotency key once', async () => {
    const receiver = await startReceiver();
    const body = JSON.stringify({
      id: 'd1',
      deliveries: [
        { user: 'u1', badge: { total: 3 }, reasons: ['notices'], shown: 1, seq: 7, items: [] },
      ],
    });
    const post = (signature: string, raw = body, key = 'd1') =>
      fetch(receiver.url, {
        method: 'POST',
        headers: { 'x-bubble-signature': signature, 'idempotency-key': key },
        body: raw,
      });
    const now = Date.now() / 1000;
    expect(
      (await post(signWebhook('another-secret-of-32-bytes-or-more!!', body, now))).status,
    ).toBe(401);
    expect((await post(signWebhook(SECRET, body, now - 301))).status).toBe(401);
    expect((await post(signWebhook(SECRET, body, now))).status).toBe(200);
    expect((await post(signWebhook(SECRET, body, now))).status).toBe(200);
    // An older entry (seq 6) arriving after it, and a decrease: stale, then a silent badge.
    const later = JSON.stringify({
      id: 'd2',
      deliveries: [
        { user: 'u1', badge: { total: 2 }, reasons: ['read'], shown: 1, seq: 6, items: [] },
        { user: 'u1', badge: { total: 0 }, reasons: ['read'], shown: 3, seq: 8, items: [] },
      ],
    });
    expect((await post(signWebhook(SECRET, later, now), later, 'd2')).status).toBe(200);
    const lines = printed(receiver.proc) as unknown as Array<Record<string, unknown>>;
    expect(lines.map((line) => [line.id, line.seq, line.stale ?? false])).toEqual([
      ['d1', 7, false],
      ['d2', 6, true],
      ['d2', 8, false],
    ]);
    // An increase naming nothing, and a decrease: both badge-only, no banner.
    expect(lines[0]!.apns).toEqual({
      headers: { 'apns-push-type': 'alert', 'apns-priority': '5' },
      payload: { aps: { badge: 3 } },
    });
    expect(lines[2]!.fcm).toEqual({
      message: {
        token: '<device token of u1>',
        android: { priority: 'normal' },
        data: { badge: '0', seq: '8' },
      },
    });
  });

  it('bubble all without Redis refuses BUBBLE_WEBHOOK_URL before it listens', async () => {
    const run = new BubbleProcess({
      args: ['all'],
      cwd: rig.cwd,
      env: {
        PORT: String(await freePort()),
        BUBBLE_WEBHOOK_URL: 'http://127.0.0.1:9/push',
        BUBBLE_WEBHOOK_SECRET: SECRET,
      },
    });
    running.push(run);
    const exit = await run.waitExit(20_000);
    expect(exit.code).not.toBe(0);
    expect(run.stderr + run.stdout).toContain('queued in Redis');
    expect(run.stdout + run.stderr).not.toContain('is listening');
  });
});

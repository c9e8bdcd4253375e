/**
 * Offline delivery's failures against a real local receiver: a 4xx goes to the dead letters at
 * once, a 503 with Retry-After is retried no sooner than it asks, the same id and body each
 * time, and a receiver failing every time is given up after BUBBLE_WEBHOOK_MAX_ATTEMPTS.
 */
import type { DeadDelivery } from '@bubble/store';
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { metricValue, startWorkers, type Stack, webhookTestFile } from './webhook-support.js';

const file = webhookTestFile();

async function setUp(options: Parameters<typeof startWorkers>[2] = {}) {
  const stack = await file.stack();
  const receiver = await file.receiver();
  const workers = await file.workers(stack, receiver.url, options);
  await stack.service.replaceMembers('pair', ['alice', 'bob']);
  // alice writes from the app: only bob, offline, is delivered.
  await stack.service.setPresence('alice', true, 60_000);
  return { stack, receiver, workers };
}

async function firstDeadLetter(stack: Stack): Promise<DeadDelivery> {
  const letters = await waitFor(async () => {
    const found = await stack.queue.deadLetters();
    return found.length > 0 ? found : null;
  });
  return letters![0]!;
}

describe('offline delivery failures', () => {
  it('a 4xx is dead-lettered at once, with its id, body, error, attempts and status', async () => {
    const { stack, receiver, workers } = await setUp();
    receiver.answer = () => ({ status: 422 });
    await stack.service.ingestMessages('pair', [{ seq: 1, from: 'alice' }]);
    const dead = await firstDeadLetter(stack);
    expect(receiver.requests).toHaveLength(1);
    expect(dead).toMatchObject({ attempts: 1, status: 422, error: 'HTTP 422' });
    expect(dead.id).toBe(receiver.requests[0]!.id);
    expect(JSON.parse(dead.body).deliveries[0].user).toBe('bob');
    const rejected = { reason: 'rejected' };
    // The dead letter is written first, then the batch forgotten and counted.
    await waitFor(
      async () =>
        (await metricValue(workers.registry, 'bubble_webhook_dead_lettered_total', rejected)) === 1,
    );
    expect(await metricValue(workers.registry, 'bubble_webhook_retries_total')).toBe(0);
    expect(await workers.stats()).toMatchObject({ retrying: 0, deadLetters: 1, queued: 0 });
  });

  it('a 503 with Retry-After is retried no sooner than it asks, with the same id and body', async () => {
    // Backoff alone would retry within 20 ms.
    const { stack, receiver, workers } = await setUp({ retryBaseMs: 10, retryMaxMs: 20 });
    receiver.answer = (_request, nth) =>
      nth === 0 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 };
    await stack.service.ingestMessages('pair', [{ seq: 1, from: 'alice' }]);
    await waitFor(() => receiver.accepted().length === 1, { timeoutMs: 8_000 });
    // Counted once the worker has the answer, just after the receiver recorded it.
    const ok = { outcome: 'ok' };
    await waitFor(
      async () => (await metricValue(workers.registry, 'bubble_webhook_requests_total', ok)) === 1,
    );
    const [first, second] = receiver.requests;
    expect(receiver.requests).toHaveLength(2);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(2_000);
    expect(second!.id).toBe(first!.id);
    expect(second!.idempotencyKey).toBe(first!.idempotencyKey);
    expect(second!.deliveries).toEqual(first!.deliveries);
    expect(second!.signatureValid).toBe(true);
    expect(
      await metricValue(workers.registry, 'bubble_webhook_requests_total', { outcome: 'retry' }),
    ).toBe(1);
    expect(
      await metricValue(workers.registry, 'bubble_webhook_requests_total', { outcome: 'ok' }),
    ).toBe(1);
  });

  it('a receiver failing every time is given up after the maximum attempts', async () => {
    const { stack, receiver, workers } = await setUp({ maxAttempts: 3, retryBaseMs: 20 });
    receiver.answer = () => ({ status: 500 });
    await stack.service.ingestMessages('pair', [{ seq: 1, from: 'alice' }]);
    const dead = await firstDeadLetter(stack);
    expect(receiver.requests).toHaveLength(3);
    expect(new Set(receiver.requests.map((r) => r.id)).size).toBe(1);
    expect(dead).toMatchObject({ attempts: 3, status: 500 });
    const exhausted = { reason: 'attempts' };
    await waitFor(
      async () =>
        (await metricValue(workers.registry, 'bubble_webhook_dead_lettered_total', exhausted)) ===
        1,
    );
    const given = { outcome: 'dead' };
    expect(await metricValue(workers.registry, 'bubble_webhook_deliveries_total', given)).toBe(1);
  });
});

/**
 * The sources client against a real local endpoint: batching, coalescing, the concurrency bound,
 * urgent needs first, the signed body, the metrics and close().
 */
import { verifyWebhook } from '@bubble/events';
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import {
  addUsers,
  metricValue,
  SECRET,
  startClient,
  startEndpoint,
  startRig,
} from './sources-client-support.js';

describe('sources client: requests', () => {
  it('batches 250 users into 3 signed requests of at most 100 and answers each from the graph', async () => {
    const { endpoint, client } = await startRig();
    const users = addUsers(endpoint, 'u', 250);
    endpoint.graph.set('u7', {
      follows: ['a1'],
      topics: [],
      readAt: 1_700_000_000_000,
      noticesSeen: 42,
    });
    const outcomes = await client.fetch(users);

    expect([...outcomes.keys()]).toEqual(users);
    expect(outcomes.get('u0')).toEqual({
      ok: true,
      answer: { follows: ['u0.a', 'u0.b'], topics: ['u0.t'] },
    });
    expect(outcomes.get('u7')).toEqual({
      ok: true,
      answer: { follows: ['a1'], topics: [], readAt: 1_700_000_000_000, noticesSeen: 42 },
    });
    expect([...outcomes.values()].every((o) => o.ok)).toBe(true);
    expect(endpoint.requests.map((r) => r.users.length)).toEqual([100, 100, 50]);
    expect(endpoint.requests.flatMap((r) => r.users).sort()).toEqual([...users].sort());
    for (const request of endpoint.requests) {
      expect(request.body).toBe(JSON.stringify({ users: request.users }));
      expect(request.contentType).toBe('application/json');
      expect(request.signatureValid).toBe(true);
      expect(request.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verifyWebhook(SECRET, request.signature, request.body)).toBe(true);
      expect(
        verifyWebhook('another-secret-of-32-bytes-or-more!!', request.signature, request.body),
      ).toBe(false);
    }
  });

  it('answers a user the endpoint left out as following nothing', async () => {
    const { endpoint, client } = await startRig();
    addUsers(endpoint, 'k', 1);
    const outcomes = await client.fetch(['k0', 'nobody']);
    expect(outcomes.get('nobody')).toEqual({ ok: true, answer: { follows: [], topics: [] } });
    expect(outcomes.get('k0')?.ok).toBe(true);
    expect(endpoint.requests).toHaveLength(1);
  });

  it('a request the endpoint cannot verify (another secret) is refused: unreachable', async () => {
    const endpoint = await startEndpoint({ secret: 'the-platform-has-another-secret-0123456789' });
    const { client } = startClient(endpoint, { maxAttempts: 1 });
    const outcomes = await client.fetch(['a']);
    expect(outcomes.get('a')).toEqual({ ok: false, reason: 'unreachable' });
    expect(endpoint.requests[0]?.signatureValid).toBe(false);
    expect(client.stats().requests.error).toBe(1);
  });

  it('answers an asked id that breaks the grammar as invalid without a request', async () => {
    const { endpoint, client } = await startRig();
    const outcomes = await client.fetch(['bad id', 'fine']);
    expect(outcomes.get('bad id')).toEqual({ ok: false, reason: 'invalid' });
    expect(outcomes.get('fine')?.ok).toBe(true);
    expect(endpoint.requests.map((r) => r.users)).toEqual([['fine']]);
    expect(await client.fetch([])).toEqual(new Map());
  });

  it('posts the credentials of the URL as Basic authorization and logs only the origin', async () => {
    const endpoint = await startEndpoint();
    const url = new URL(endpoint.url);
    url.username = 'platform';
    url.password = 'hunter2-password';
    const { client, lines } = startClient(endpoint, { url: url.toString(), maxAttempts: 1 });
    endpoint.setMode({ kind: 'fail' });
    await client.fetch(['a']);
    expect(lines.some((line) => line.endpoint === url.origin)).toBe(true);
    const logged = JSON.stringify(lines);
    expect(logged).not.toContain('hunter2');
    expect(logged).not.toContain(SECRET);
  });
});

describe('sources client: sharing and bounds', () => {
  it('two concurrent fetches of one user share one request', async () => {
    const { endpoint, client } = await startRig();
    addUsers(endpoint, 'c', 3);
    const [first, second] = await Promise.all([
      client.fetch(['c0', 'c1']),
      client.fetch(['c1', 'c2']),
    ]);
    expect(endpoint.requests).toHaveLength(1);
    expect(endpoint.requests[0]!.users.sort()).toEqual(['c0', 'c1', 'c2']);
    expect(first.get('c1')).toEqual(second.get('c1'));
    expect(second.get('c1')).toEqual({
      ok: true,
      answer: { follows: ['c1.a', 'c1.b'], topics: ['c1.t'] },
    });
  });

  it('a fetch of a user whose request is in flight waits for that request', async () => {
    const { endpoint, client } = await startRig({ mode: { kind: 'slow', delayMs: 300 } });
    addUsers(endpoint, 's', 1);
    const first = client.fetch(['s0']);
    await waitFor(() => endpoint.inFlight === 1);
    expect(client.stats().usersInFlight).toBe(1);
    const second = await client.fetch(['s0']);
    expect(second.get('s0')?.ok).toBe(true);
    expect((await first).get('s0')).toEqual(second.get('s0'));
    expect(endpoint.requests).toHaveLength(1);
  });

  it('keeps at most `concurrency` requests in flight and counts the rest as waiting', async () => {
    const { endpoint, client, registry } = await startRig(
      { mode: { kind: 'slow', delayMs: 300 } },
      { concurrency: 2, batchSize: 1 },
    );
    const users = addUsers(endpoint, 'q', 8);
    const fetched = client.fetch(users);
    await waitFor(() => endpoint.inFlight === 2);
    expect(client.stats()).toMatchObject({
      usersWaiting: 6,
      usersInFlight: 2,
      requestsInFlight: 2,
    });
    expect(await metricValue(registry, 'bubble_sources_users_waiting')).toBe(6);
    const outcomes = await fetched;
    expect([...outcomes.values()].every((o) => o.ok)).toBe(true);
    expect(endpoint.requests).toHaveLength(8);
    expect(endpoint.maxInFlight).toBe(2);
    expect(client.stats()).toMatchObject({
      usersWaiting: 0,
      usersInFlight: 0,
      requestsInFlight: 0,
    });
  });

  it('sends needs with a deadline ahead of the background ones queued before them', async () => {
    const { endpoint, client } = await startRig(
      { mode: { kind: 'slow', delayMs: 300 } },
      { concurrency: 1, batchSize: 2 },
    );
    const background = client.fetch(addUsers(endpoint, 'bg', 6));
    await waitFor(() => endpoint.inFlight === 1);
    const urgent = await client.fetch(addUsers(endpoint, 'now', 1), {
      deadline: Date.now() + 5_000,
    });
    expect(urgent.get('now0')?.ok).toBe(true);
    await background;
    expect(endpoint.requests.map((r) => r.users)).toEqual([
      ['bg0', 'bg1'],
      ['now0', 'bg2'],
      ['bg3', 'bg4'],
      ['bg5'],
    ]);
  });

  it('close() aborts the requests in flight and resolves every pending fetch as unreachable', async () => {
    const { endpoint, client } = await startRig({ mode: { kind: 'hang' } });
    const pending = client.fetch(['h1', 'h2']);
    await waitFor(() => endpoint.inFlight === 1);
    await client.close();
    expect(await pending).toEqual(
      new Map([
        ['h1', { ok: false, reason: 'unreachable' }],
        ['h2', { ok: false, reason: 'unreachable' }],
      ]),
    );
    await waitFor(() => endpoint.inFlight === 0);
    expect((await client.fetch(['h3'])).get('h3')).toEqual({ ok: false, reason: 'unreachable' });
    await client.close();
  });
});

describe('sources client: metrics', () => {
  it('counts requests, users and latency, the same in stats() and on the registry', async () => {
    const { endpoint, client, registry } = await startRig({}, { maxAttempts: 1 });
    const users = addUsers(endpoint, 'm', 120);
    await client.fetch(users);
    endpoint.setMode({ kind: 'over-cap', cap: 60, users: ['x1'] });
    await client.fetch(['x1', 'x2']);
    endpoint.setMode({ kind: 'fail' });
    await client.fetch(['y1', 'y2', 'y3']);
    endpoint.setMode({ kind: 'garbage' });
    await client.fetch(['z1']);

    expect(client.stats()).toEqual({
      requests: { ok: 3, error: 1, timeout: 0, invalid: 1 },
      users: { ok: 121, invalid: 1, failed: 4, paused: 0 },
      usersWaiting: 0,
      usersInFlight: 0,
      requestsInFlight: 0,
      breakerOpen: 0,
    });
    const value = (series: string) => metricValue(registry, series);
    expect(await value('bubble_sources_requests_total{result="ok"}')).toBe(3);
    expect(await value('bubble_sources_requests_total{result="error"}')).toBe(1);
    expect(await value('bubble_sources_requests_total{result="invalid"}')).toBe(1);
    expect(await value('bubble_sources_request_seconds_count')).toBe(5);
    expect(await value('bubble_sources_users_fetched_total{result="ok"}')).toBe(121);
    expect(await value('bubble_sources_users_fetched_total{result="invalid"}')).toBe(1);
    expect(await value('bubble_sources_users_fetched_total{result="failed"}')).toBe(4);
    expect(await value('bubble_sources_users_waiting')).toBe(0);
    expect(await value('bubble_sources_breaker_open')).toBe(0);
  });

  it('refuses options out of range with a message naming the option', async () => {
    const endpoint = await startEndpoint();
    expect(() => startClient(endpoint, { concurrency: 0 })).toThrow(
      'sources client: concurrency must be an integer ≥ 1',
    );
    expect(() => startClient(endpoint, { batchSize: 101 })).toThrow(
      'sources client: batchSize must be an integer 1 to 100',
    );
    expect(() => startClient(endpoint, { url: 'ftp://example.com/' })).toThrow(
      'sources client: url must be http or https',
    );
    expect(() => startClient(endpoint, { secret: '' })).toThrow(
      'sources client: secret must not be empty',
    );
  });
});

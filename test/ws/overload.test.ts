/**
 * Pressure (shared spec api.md; issue 4): pollers are told to poll less often as the gateway's
 * event loop lags, and past the overload mark polls get 503 with Retry-After and new sockets
 * 1013, while sockets already open stay; a gateway at its connection limit closes new sockets
 * with 1013 too. The lag is real: the test blocks the event loop the in-process gateway runs on.
 * (The load logic does not depend on the storage engine: memory only.)
 */
import { waitFor } from '@bubble/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { CLOSE, call, tokenFor, useEngine, type LiveApp } from './support.js';
import { Client, connect, ids } from './live-client.js';

/** Keeps the event loop blocked `blockMs` out of every `everyMs` until stopped. */
function lagEventLoop(blockMs: number, everyMs: number): () => void {
  const timer = setInterval(() => {
    const until = performance.now() + blockMs;
    while (performance.now() < until) {
      // a busy process: nothing else runs meanwhile
    }
  }, everyMs);
  return () => clearInterval(timer);
}

async function poll(app: LiveApp, token: string) {
  return call(app, 'GET', '/v1/badge', { headers: { authorization: `Bearer ${token}` } });
}

describe('gateway under pressure [memory]', () => {
  const rig = useEngine('memory');
  let stopLag: (() => void) | undefined;
  afterEach(() => {
    stopLag?.();
    stopLag = undefined;
  });

  it('polls are told to slow down as the loop lags, then refused with Retry-After, and sockets with 1013', async () => {
    const app = await rig.start({ core: false });
    const [user, other] = ids('load', 2) as [string, string];
    const token = await tokenFor(user);
    const open = await connect(app, other, 'already open');

    const calm = await poll(app, token);
    expect(calm.status).toBe(200);
    const base = Number(calm.headers.get('x-poll-interval'));
    expect(base).toBeGreaterThan(0);

    // Strained: the loop stalls 300 ms at a time; the interval advertised grows (×4).
    stopLag = lagEventLoop(300, 400);
    await waitFor(
      async () => Number((await poll(app, token)).headers.get('x-poll-interval')) === base * 4,
      { timeoutMs: 10_000, message: 'the poll interval did not grow under lag' },
    );
    stopLag();

    // Overloaded: stalls over a second. Polls are refused, new sockets closed with 1013.
    stopLag = lagEventLoop(1_100, 1_200);
    let refused: Awaited<ReturnType<typeof poll>> | undefined;
    await waitFor(
      async () => {
        const answer = await poll(app, token);
        if (answer.status === 503) refused = answer;
        return refused !== undefined;
      },
      { timeoutMs: 10_000, message: 'no poll was refused while overloaded' },
    );
    expect(JSON.parse(refused!.text)).toMatchObject({ error: { code: 'UB_ERR_UNAVAILABLE' } });
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0);
    const late = Client.open(app, { token: await tokenFor(user) }, 'late');
    expect((await late.waitClose(10_000)).code).toBe(CLOSE.overloaded);
    stopLag();

    // Calm again: the socket that was open all along is still there and answers; polls are back.
    await open.roundTrip();
    await waitFor(
      async () => {
        const answer = await poll(app, token);
        return answer.status === 200 && Number(answer.headers.get('x-poll-interval')) === base;
      },
      { timeoutMs: 10_000, message: 'the gateway did not recover' },
    );
    await connect(app, user, 'after');
  }, 60_000);

  it('a gateway at its connection limit closes new sockets with 1013 and takes them again after', async () => {
    const app = await rig.start({ core: false, maxConnections: 2 });
    const [a, b, c] = ids('cap', 3) as [string, string, string];
    const first = await connect(app, a);
    await connect(app, b);
    const third = Client.open(app, { token: await tokenFor(c) }, 'third');
    expect((await third.waitClose()).code).toBe(CLOSE.overloaded);

    first.close();
    await first.waitClose();
    await waitFor(() => app.gateway.ws!.connections === 1, { message: 'the closed socket stayed' });
    await connect(app, c, 'third again');
  });
});

/**
 * The SDK polling a real bubble gateway (in process, on the in-memory engine) whose per-user
 * limit it runs into: every 429 `UB_ERR_RATE_LIMITED` is waited out for its Retry-After before
 * the next poll, never at the shorter X-Poll-Interval. The timers are scaled down (recorded at
 * their full length), so the bucket, refilled in real time, keeps refusing.
 */
import { BubbleClient, type FetchLike } from '@bubble/client';
import { MemoryStore } from '@bubble/store';
import { afterEach, describe, expect, it } from 'vitest';
import { startApp, tokenFor, type App } from '../http/support.js';
import { TestTimers, until } from './support.js';

let app: App | undefined;
let client: BubbleClient | undefined;

afterEach(async () => {
  client?.close();
  await app?.close();
  await app?.store.close();
});

describe('BubbleClient polling a rate-limited gateway', () => {
  it('waits Retry-After (not the poll interval) after each 429', async () => {
    // Two polls at once, then one per 5 s: Retry-After 5 after the burst.
    app = await startApp(new MemoryStore(), {
      gateway: {
        basePollSeconds: 1,
        clientLimits: {
          perUser: { perSecond: 0.2, burst: 2 },
          perAddress: { perSecond: 1_000_000, burst: 1_000_000 },
        },
      },
    });
    const answers: Array<{ status: number; retryAfter: number }> = [];
    const recording: FetchLike = async (url, init) => {
      const res = await fetch(url, init);
      answers.push({ status: res.status, retryAfter: Number(res.headers.get('retry-after')) });
      return res;
    };
    const timers = new TestTimers(0.01);
    client = new BubbleClient({
      url: app.url,
      token: await tokenFor('eager'),
      WebSocket: undefined,
      fetch: recording,
      timers,
      pollIntervalMs: 1_000,
    });
    const errors: Array<{ code: string; status: number | undefined }> = [];
    client.on('error', (error) => errors.push({ code: error.code, status: error.status }));
    client.start();
    await until(() => answers.filter((a) => a.status === 429).length >= 3, 'three refused polls');
    client.close();

    expect(answers.slice(0, 2).map((a) => a.status)).toEqual([200, 304]);
    // delays[0] starts the first poll; delays[i + 1] is what the client waited after answer i.
    answers.forEach((answer, i) => {
      const waited = timers.delays[i + 1];
      if (waited === undefined) return;
      if (answer.status === 429) {
        expect(answer.retryAfter).toBe(5);
        expect(waited).toBe(5_000);
      } else {
        expect(waited).toBe(1_000);
      }
    });
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(errors.every((e) => e.code === 'UB_ERR_RATE_LIMITED' && e.status === 429)).toBe(true);
  });
});

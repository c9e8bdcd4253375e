/** What the HTTP gateway route files (test/http/gateway-routes-*.test.ts) share. */
import { expect } from 'vitest';
import { JWT_SECRET, client, parseJson, platform, type App, type Badge } from './support.js';

/** The fields of a badge, sorted. */
export const BADGE_FIELDS = [
  'user',
  'epoch',
  'version',
  'feed',
  'notices',
  'conversations',
  'conversationsTotal',
  'reddots',
  'total',
  'display',
  'computedAt',
].sort();

export const secretKey = new TextEncoder().encode(JWT_SECRET);
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
export const b64url = (value: unknown): string =>
  Buffer.from(JSON.stringify(value)).toString('base64url');

/** The calls the route tests share, on the app of the current test (`current()`). */
export function routeCalls(current: () => App) {
  /** Follows `authors` for `user` and checks the 204s. */
  async function followAll(user: string, authors: string[]): Promise<void> {
    for (const author of authors) {
      const reply = await platform(current(), 'PUT', `/v1/users/${user}/follows/${author}`);
      expect(reply.status).toBe(204);
    }
  }

  async function ingest(
    body: unknown,
    target: App = current(),
  ): Promise<{ accepted: number; ignored: number }> {
    const reply = await platform(target, 'POST', '/v1/posts', { body });
    expect(reply.status, reply.text).toBe(202);
    return parseJson(reply) as { accepted: number; ignored: number };
  }

  async function myBadge(token: string, target: App = current()): Promise<Badge> {
    const reply = await client(target, token, 'GET', '/v1/badge');
    expect(reply.status, reply.text).toBe(200);
    return parseJson(reply) as Badge;
  }

  return { followAll, ingest, myBadge };
}

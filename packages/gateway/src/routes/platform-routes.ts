import {
  BubbleError,
  DEFAULT_PRESENCE_TTL_MS,
  assertId,
  postBatchSchema,
  presenceSchema,
  replaceFollowsSchema,
} from '@bubble/protocol';
import type { BadgeService } from '@bubble/core';
import type { Authenticator } from '../auth.js';
import { readBody } from '../http/body.js';
import { sendEmpty, sendJson } from '../http/respond.js';
import type { RequestContext, Router } from '../http/router.js';
import type { GatewayMetrics } from '../metrics.js';

export interface PlatformDeps {
  service: BadgeService;
  auth: Authenticator;
  metrics: GatewayMetrics;
  /** GET /v1/cluster; absent where no cluster runs. */
  clusterStatus?: () => Promise<unknown>;
}

/** Ingest and admin calls, authenticated by the platform's API key. */
export function addPlatformRoutes(
  router: Router,
  { service, auth, metrics, clusterStatus }: PlatformDeps,
): void {
  const platform =
    (handler: (ctx: RequestContext) => Promise<void>) =>
    async (ctx: RequestContext): Promise<void> => {
      auth.requirePlatform(ctx.req);
      await handler(ctx);
    };

  router
    .add(
      'PUT',
      '/v1/users/:user/follows/:author',
      platform(async ({ res, params }) => {
        await service.follow(param(params, 'user'), param(params, 'author'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'DELETE',
      '/v1/users/:user/follows/:author',
      platform(async ({ res, params }) => {
        await service.unfollow(param(params, 'user'), param(params, 'author'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'PUT',
      '/v1/users/:user/follows',
      platform(async ({ req, res, params }) => {
        const user = param(params, 'user');
        assertId(user, 'user');
        const body = await readBody(req, replaceFollowsSchema);
        await service.replaceFollows(user, body.authors);
        sendEmpty(res, 204);
      }),
    )
    .add(
      'GET',
      '/v1/users/:user/follows',
      platform(async ({ res, params }) => {
        sendJson(res, 200, { authors: await service.listFollows(param(params, 'user')) });
      }),
    )
    .add(
      'POST',
      '/v1/posts',
      platform(async ({ req, res }) => {
        const body = await readBody(req, postBatchSchema);
        const posts = 'posts' in body ? body.posts : [body];
        const result = await service.ingestPosts(posts);
        metrics.postsIngested.inc({ outcome: 'accepted' }, result.accepted);
        metrics.postsIngested.inc({ outcome: 'ignored' }, result.ignored);
        // Exactly the contract's fields: the store's result carries internals (e.g. the posts).
        sendJson(res, 202, { accepted: result.accepted, ignored: result.ignored });
      }),
    )
    .add(
      'DELETE',
      '/v1/posts/:author/:id',
      platform(async ({ res, params }) => {
        await service.deletePost(param(params, 'author'), param(params, 'id'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'POST',
      '/v1/presence',
      platform(async ({ req, res }) => {
        const body = await readBody(req, presenceSchema);
        await service.setPresence(body.user, body.online, body.ttlMs ?? DEFAULT_PRESENCE_TTL_MS);
        sendEmpty(res, 204);
      }),
    )
    .add(
      'GET',
      '/v1/cluster',
      platform(async ({ res }) => {
        if (!clusterStatus) throw new BubbleError('UB_ERR_NOT_FOUND', 'no cluster runs here');
        sendJson(res, 200, await clusterStatus());
      }),
    )
    .add(
      'GET',
      '/v1/users/:user/badge',
      platform(async ({ res, params }) => {
        const started = performance.now();
        const badge = await service.badge(param(params, 'user'));
        metrics.coldStarts.observe((performance.now() - started) / 1000);
        sendJson(res, 200, badge);
      }),
    );
}

export function param(params: Record<string, string>, name: string): string {
  const value = params[name];
  if (value === undefined)
    throw new BubbleError('UB_ERR_BAD_REQUEST', `missing path parameter ${name}`);
  return value;
}

import {
  BubbleError,
  DEFAULT_PRESENCE_TTL_MS,
  assertId,
  counterBatchSchema,
  cursorMigrationSchema,
  membersSchema,
  messageBatchSchema,
  noticeSchema,
  postBatchSchema,
  presenceSchema,
  reddotMarkSchema,
  replaceFollowsSchema,
  replaceTopicsSchema,
} from '@bubble/protocol';
import type { BadgeService } from '@bubble/badges';
import type { Badge, ClusterStatus } from '@bubble/protocol';
import type { Authenticator } from '../auth.js';
import { readBody, readOptionalBody } from '../http/body.js';
import { sendEmpty, sendJson } from '../http/respond.js';
import type { RequestContext, Router } from '../http/router.js';
import type { GatewayMetrics } from '../metrics.js';

export interface PlatformDeps {
  service: BadgeService;
  auth: Authenticator;
  metrics: GatewayMetrics;
  /** GET /v1/cluster; absent where no cluster runs. */
  clusterStatus?: () => Promise<ClusterStatus>;
  /** Hands a badge this gateway computed to the user's sockets held here. */
  published?: ((badge: Badge) => void) | undefined;
}

/** Ingest and admin calls, authenticated by the platform's API key. */
export function addPlatformRoutes(
  router: Router,
  { service, auth, metrics, clusterStatus, published }: PlatformDeps,
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
      'PUT',
      '/v1/users/:user/topics/:topic',
      platform(async ({ res, params }) => {
        await service.followTopic(param(params, 'user'), param(params, 'topic'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'DELETE',
      '/v1/users/:user/topics/:topic',
      platform(async ({ res, params }) => {
        await service.unfollowTopic(param(params, 'user'), param(params, 'topic'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'PUT',
      '/v1/users/:user/topics',
      platform(async ({ req, res, params }) => {
        const user = param(params, 'user');
        assertId(user, 'user');
        const body = await readBody(req, replaceTopicsSchema);
        await service.replaceTopics(user, body.topics);
        sendEmpty(res, 204);
      }),
    )
    .add(
      'GET',
      '/v1/users/:user/topics',
      platform(async ({ res, params }) => {
        sendJson(res, 200, { topics: await service.listTopics(param(params, 'user')) });
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
      'POST',
      '/v1/counters',
      platform(async ({ req, res }) => {
        const body = await readBody(req, counterBatchSchema);
        const events = 'events' in body ? body.events : [body];
        const result = await service.ingestCounterEvents(events);
        metrics.counterEventsIngested.inc({ outcome: 'accepted' }, result.accepted);
        metrics.counterEventsIngested.inc({ outcome: 'ignored' }, result.ignored);
        sendJson(res, 202, { accepted: result.accepted, ignored: result.ignored });
      }),
    )
    .add(
      'POST',
      '/v1/cursors',
      platform(async ({ req, res }) => {
        const body = await readBody(req, cursorMigrationSchema);
        sendJson(res, 202, await service.migrateCursors(body));
      }),
    )
    .add(
      'DELETE',
      '/v1/counters/:user/:kind/:id',
      platform(async ({ res, params }) => {
        await service.retractCounterEvent(
          param(params, 'user'),
          param(params, 'kind'),
          param(params, 'id'),
        );
        sendEmpty(res, 204);
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
        const { badge, stale } = await service.serveBadge(param(params, 'user'));
        metrics.coldStarts.observe((performance.now() - started) / 1000);
        sendJson(res, 200, badge, stale ? { 'x-bubble-stale': '1' } : {});
      }),
    )
    .add(
      'GET',
      '/v1/users/:user/badge/explain',
      platform(async ({ res, params }) => {
        sendJson(res, 200, await service.explain(param(params, 'user')));
      }),
    )
    .add(
      'POST',
      '/v1/users/:user/badge/reset',
      platform(async ({ res, params }) => {
        const badge = await service.reset(param(params, 'user'));
        published?.(badge);
        sendJson(res, 200, badge);
      }),
    )
    .add(
      'POST',
      '/v1/notices',
      platform(async ({ req, res }) => {
        const body = await readBody(req, noticeSchema);
        await service.publishNotice(body.id, body.ts);
        sendEmpty(res, 202);
      }),
    )
    .add(
      'DELETE',
      '/v1/notices/:id',
      platform(async ({ res, params }) => {
        await service.withdrawNotice(positiveInteger(param(params, 'id'), 'notice id'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'PUT',
      '/v1/reddots/:name',
      platform(async ({ req, res, params }) => {
        const name = assertId(param(params, 'name'), 'red dot');
        const body = await readOptionalBody(req, reddotMarkSchema);
        await service.markReddot(name, body?.ts);
        sendEmpty(res, 204);
      }),
    )
    .add(
      'DELETE',
      '/v1/reddots/:name',
      platform(async ({ res, params }) => {
        await service.clearReddot(param(params, 'name'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'PUT',
      '/v1/conversations/:id/members',
      platform(async ({ req, res, params }) => {
        const conversation = assertId(param(params, 'id'), 'conversation');
        const body = await readBody(req, membersSchema);
        await service.replaceMembers(conversation, body.members);
        sendEmpty(res, 204);
      }),
    )
    .add(
      'POST',
      '/v1/conversations/:id/members',
      platform(async ({ req, res, params }) => {
        const conversation = assertId(param(params, 'id'), 'conversation');
        const body = await readBody(req, membersSchema);
        await service.addMembers(conversation, body.members);
        sendEmpty(res, 204);
      }),
    )
    .add(
      'DELETE',
      '/v1/conversations/:id/members/:user',
      platform(async ({ res, params }) => {
        await service.removeMember(param(params, 'id'), param(params, 'user'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'DELETE',
      '/v1/conversations/:id',
      platform(async ({ res, params }) => {
        await service.dissolve(param(params, 'id'));
        sendEmpty(res, 204);
      }),
    )
    .add(
      'POST',
      '/v1/conversations/:id/messages',
      platform(async ({ req, res, params }) => {
        const conversation = assertId(param(params, 'id'), 'conversation');
        const body = await readBody(req, messageBatchSchema);
        const messages = 'messages' in body ? body.messages : [body];
        sendJson(res, 202, await service.ingestMessages(conversation, messages));
      }),
    );
}

function positiveInteger(raw: string, what: string): number {
  const value = /^[1-9]\d{0,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value)) {
    throw new BubbleError('UB_ERR_BAD_ID', `${what} must be a positive safe integer`);
  }
  return value;
}

export function param(params: Record<string, string>, name: string): string {
  const value = params[name];
  if (value === undefined)
    throw new BubbleError('UB_ERR_BAD_REQUEST', `missing path parameter ${name}`);
  return value;
}

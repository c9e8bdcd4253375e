import { createHash } from 'node:crypto';
import {
  BubbleError,
  LIMITS,
  assertId,
  badgeEtag,
  muteSchema,
  readRequestSchema,
  type Badge,
} from '@bubble/protocol';
import type { BadgeService } from '@bubble/badges';
import type { Authenticator } from '../auth.js';
import { readBody } from '../http/body.js';
import type { ClientLimits } from '../http/client-limits.js';
import { sendEmpty, sendJson } from '../http/respond.js';
import type { Router } from '../http/router.js';
import type { LiveUsers } from '../live/live-users.js';
import type { LoadMonitor } from '../load-monitor.js';
import type { GatewayMetrics } from '../metrics.js';

export interface ClientDeps {
  service: BadgeService;
  auth: Authenticator;
  load: LoadMonitor;
  metrics: GatewayMetrics;
  /** Every client route is admitted by these first: before any store access or body read. */
  limits: ClientLimits;
  /** When present, polls are answered from the users held here (no Redis when nothing changed). */
  live?: LiveUsers | undefined;
}

/** End-user calls, authenticated by a JWT; the user is always the token's subject. */
export function addClientRoutes(
  router: Router,
  { service, auth, load, metrics, limits, live }: ClientDeps,
): void {
  router
    .add('GET', '/v1/badge', async ({ req, res }) => {
      const user = await limits.admit(req, auth);
      if (load.overloaded()) {
        throw new BubbleError('UB_ERR_UNAVAILABLE', 'the gateway is overloaded; poll again later');
      }
      const started = performance.now();
      let badge: Badge;
      let interval = load.pollIntervalSeconds();
      let stale = false;
      if (live) {
        const polled = await live.poll(user, interval);
        ({ badge, stale } = polled);
        interval = polled.intervalSeconds;
        if (!polled.fromCache) metrics.coldStarts.observe((performance.now() - started) / 1000);
      } else {
        ({ badge, stale } = await service.serveBadge(user, { seen: true }));
        metrics.coldStarts.observe((performance.now() - started) / 1000);
      }
      const etag = badgeEtag(badge);
      const headers: Record<string, string> = {
        etag,
        'x-poll-interval': String(interval),
        'cache-control': 'private, no-cache',
      };
      if (stale) headers['x-bubble-stale'] = '1';
      if (ifNoneMatch(req.headers['if-none-match'], etag)) {
        sendEmpty(res, 304, headers);
        return;
      }
      sendJson(res, 200, badge, headers);
    })
    .add('POST', '/v1/badge/read', async ({ req, res }) => {
      const user = await limits.admit(req, auth);
      const body = await readBody(req, readRequestSchema);
      const badge = await service.read(user, body);
      live?.publishLocal(badge);
      sendJson(res, 200, badge, { etag: badgeEtag(badge) });
    })
    .add('GET', '/v1/conversations', async ({ req, res }) => {
      const user = await limits.admit(req, auth);
      const query = new URL(req.url ?? '/', 'http://localhost').searchParams;
      const limit = parseLimit(query.get('limit'));
      const list = await service.conversationList(user, limit);
      const body = JSON.stringify(list);
      // From the served list itself: any change of an entry, of the order or of the limit shows.
      const etag = `"${createHash('sha1').update(body).digest('base64url').slice(0, 22)}"`;
      const headers = { etag, 'cache-control': 'private, no-cache' };
      if (ifNoneMatch(req.headers['if-none-match'], etag)) {
        sendEmpty(res, 304, headers);
        return;
      }
      sendJson(res, 200, list, headers);
    })
    .add('PUT', '/v1/conversations/:id/mute', async ({ req, res, params }) => {
      const user = await limits.admit(req, auth);
      const conversation = assertId(params['id'], 'conversation');
      const body = await readBody(req, muteSchema);
      await service.setMuted(user, conversation, body.muted);
      sendEmpty(res, 204);
    });
}

function parseLimit(raw: string | null): number {
  if (raw === null) return LIMITS.maxConversationList;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1) {
    throw new BubbleError('UB_ERR_BAD_REQUEST', 'limit must be a positive integer');
  }
  return Math.min(Number(raw), LIMITS.maxConversationList);
}

function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

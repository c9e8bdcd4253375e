import { WEBHOOK_SOURCES, type WebhookSource } from '@bubble/events';
import { z } from 'zod';
import { int } from './config-values.js';

/** The platform's endpoints bubble calls: its push service, and where users' sources come from. */

/** http(s) URLs only: bubble POSTs to them. */
const endpointUrl = () =>
  z
    .string()
    .url()
    .refine((value) => /^https?:/.test(value), 'must be an http(s) URL');

export const webhooks = z
  .object({
    BUBBLE_WEBHOOK_URL: endpointUrl()
      .optional()
      .describe(
        "the platform's push service: offline users' badges are POSTed here (needs Redis); unset, nothing is delivered offline",
      ),
    BUBBLE_WEBHOOK_SECRET: z
      .string()
      .min(32, 'must be at least 32 bytes')
      .optional()
      .describe(
        'HMAC-SHA256 key of `X-Bubble-Signature`, at least 32 bytes; required with `BUBBLE_WEBHOOK_URL`',
      ),
    BUBBLE_WEBHOOK_SOURCES: z
      .string()
      .default('conversations,counters,notices')
      .transform((value, ctx) => {
        const sources = value
          .split(',')
          .map((part) => part.trim())
          .filter((part) => part !== '');
        for (const source of sources) {
          if (!WEBHOOK_SOURCES.includes(source as WebhookSource)) {
            ctx.addIssue({
              code: 'custom',
              message: `unknown source ${JSON.stringify(source)}; one of ${WEBHOOK_SOURCES.join(', ')}`,
            });
            return z.NEVER;
          }
        }
        return [...new Set(sources)] as WebhookSource[];
      })
      .describe(
        'the sources whose changes are delivered to offline users: `conversations`, `counters`, `notices`, `reddots`, `feed` (the feed digest: users seen within `BUBBLE_DIGEST_DAYS`, counted every `BUBBLE_DIGEST_INTERVAL_MS`)',
      ),
    BUBBLE_WEBHOOK_TIMEOUT_MS: int(100, 120_000)
      .default(5_000)
      .describe('a webhook request unanswered this long is retried'),
    BUBBLE_WEBHOOK_MAX_ATTEMPTS: int(1, 100)
      .default(8)
      .describe('attempts of one delivery before it goes to the dead letters'),
    BUBBLE_WEBHOOK_MIN_INTERVAL_MS: int(0, 86_400_000)
      .default(2_000)
      .describe('at most one delivery per user this often, carrying the latest badge'),
    BUBBLE_WEBHOOK_RETRY_BASE_MS: int(10, 3_600_000)
      .default(1_000)
      .describe('first retry delay of a failed delivery (exponential, full jitter)'),
    BUBBLE_WEBHOOK_RETRY_MAX_MS: int(100, 86_400_000)
      .default(300_000)
      .describe(
        'longest delay between two attempts of a delivery; at least `BUBBLE_WEBHOOK_RETRY_BASE_MS`',
      ),
    BUBBLE_WEBHOOK_QUEUE_MAX: int(100, 100_000_000)
      .default(1_000_000)
      .describe('users waiting for a delivery beyond this are shed, oldest first'),
    BUBBLE_WEBHOOK_CONCURRENCY: int(1, 256)
      .default(8)
      .describe('webhook requests one gateway has in flight at once'),
    BUBBLE_DIGEST_DAYS: int(1, 3650)
      .default(3)
      .describe(
        'with `feed` in `BUBBLE_WEBHOOK_SOURCES`: offline users seen within this many days have their feed counted (at most `BUBBLE_INACTIVE_DAYS`)',
      ),
    BUBBLE_DIGEST_INTERVAL_MS: int(1_000, 86_400_000)
      .default(900_000)
      .describe(
        "the feed digest counts each such user's feed about this often (never more often), and delivers it when it changed",
      ),
    BUBBLE_DIGEST_RATE: int(1, 1_000_000)
      .default(2_000)
      .describe(
        'users the feed digest looks at per second in each gateway, at most: gateways × rate × interval must cover the users seen within `BUBBLE_DIGEST_DAYS`',
      ),
  })
  .meta({
    title: 'Offline delivery (webhooks)',
    description:
      "Badges POSTed to the platform's push service for users without a socket ([api.md](api.md#offline-delivery-webhooks)).",
  });

export const sources = z
  .object({
    BUBBLE_SOURCES_URL: endpointUrl()
      .optional()
      .describe(
        "the platform's sources endpoint: follows and topic follows of users bubble does not hold are fetched from it; set, a user gone for `BUBBLE_INACTIVE_DAYS` keeps nothing (set it on every role)",
      ),
    BUBBLE_SOURCES_SECRET: z
      .string()
      .min(32, 'must be at least 32 bytes')
      .optional()
      .describe(
        "HMAC-SHA256 key of the requests' `X-Bubble-Signature`, at least 32 bytes; required with `BUBBLE_SOURCES_URL`",
      ),
    BUBBLE_SOURCES_TIMEOUT_MS: int(100, 60_000)
      .default(2_000)
      .describe(
        'a sources request unanswered this long fails (a cold start then serves the badge without the feed, marked stale)',
      ),
    BUBBLE_SOURCES_CONCURRENCY: int(1, 256)
      .default(16)
      .describe('sources requests one process has in flight at once (100 users each)'),
  })
  .meta({
    title: 'Sources endpoint',
    description:
      "Where users' follows come back from on demand ([api.md](api.md#sources-endpoint-rehydration-from-the-platform)).",
  });

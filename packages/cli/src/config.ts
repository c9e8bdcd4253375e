import { WEBHOOK_SOURCES, type WebhookSource } from '@bubble/events';
import { parseCidrList, publicKeyAlgorithm } from '@bubble/gateway';
import { z } from 'zod';
import { ID_PATTERN } from '@bubble/protocol';

const MS_OR_CRON = /^(\d+|(\S+\s+){4,5}\S+)$/;
const ID_LIST = z.string().transform((value) =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== ''),
);

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** Requests per second: positive, fractions allowed (0.5 is one every 2 s). */
const rate = (fallback: number) => z.coerce.number().positive().max(1_000_000).default(fallback);

const DURATION_UNITS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** Seconds, written as a number of seconds or 30s, 15m, 12h, 7d. */
const DURATION_SECONDS = z.string().transform((value, ctx) => {
  const match = /^(\d+)(s|m|h|d)?$/.exec(value.trim());
  const seconds = match
    ? Number(match[1]) * DURATION_UNITS[(match[2] ?? 's') as keyof typeof DURATION_UNITS]
    : NaN;
  if (!(seconds >= 1 && seconds <= 366 * 86_400)) {
    ctx.addIssue({ code: 'custom', message: 'a duration from 1 s to 366 d: 3600, 30m, 12h, 7d' });
    return z.NEVER;
  }
  return seconds;
});

const PUBLIC_KEY_PEM = z.string().refine(
  (value) => {
    try {
      publicKeyAlgorithm(value);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'an SPKI PEM public key: RSA of at least 2048 bits (RS256) or EC P-256 (ES256)' },
);

const CIDR_LIST = z.string().transform((value, ctx) => {
  try {
    return parseCidrList(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

/**
 * Every environment variable bubble reads, with its default and meaning (docs/operations.md).
 * Parsed once at start; a bad value stops the process naming the variable.
 */
export const configSchema = z.object({
  REDIS_URL: z
    .string()
    .url()
    .optional()
    .describe('Redis to use; without it `bubble all` runs in memory'),
  REDIS_CLUSTER_NODES: ID_LIST.optional().describe('comma host:port seeds; selects Redis Cluster'),
  BUBBLE_LOCK_REDIS_URLS: ID_LIST.optional().describe(
    'independent Redis masters for the lock quorum',
  ),
  BUBBLE_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,32}$/)
    .default('ub')
    .describe('prefix of every Redis key'),
  BUBBLE_POOLS: int(1, 10_000).default(100).describe('number of online-user pools'),
  BUBBLE_TICK: z
    .string()
    .regex(MS_OR_CRON, 'milliseconds or a node-cron expression')
    .default('1000')
    .describe('sweep period'),
  BUBBLE_LEASE_MS: int(500, 600_000).default(10_000).describe('pool lease duration'),
  BUBBLE_RECONCILE_RATE: int(0, 1_000_000)
    .default(50)
    .describe('held users a core rechecks against the stored sources per second (0: never)'),
  BUBBLE_START_RETRY_MAX_MS: int(500, 600_000)
    .default(15_000)
    .describe('longest wait between two attempts to reach Redis at start (backoff cap)'),
  BUBBLE_LOOKBACK_DAYS: z.coerce
    .number()
    .positive()
    .max(365)
    .default(7)
    .describe('feed lookback window, days'),
  BUBBLE_FOLLOW_CAP: int(1, 1_000_000).default(2000).describe('most authors one user may follow'),
  BUBBLE_TOPIC_CAP: int(1, 100_000).default(200).describe('most topics one user may follow'),
  BUBBLE_DISPLAY_CAP: int(1, 1_000_000).default(99).describe('badge display cap ("99+")'),
  BUBBLE_INACTIVE_DAYS: z.coerce
    .number()
    .positive()
    .max(3650)
    .default(30)
    .describe('per-user state dropped after this much absence'),
  BUBBLE_COUNTER_KINDS: z
    .string()
    .default('mention,comment,like')
    .transform((value, ctx) => {
      const kinds = value
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== '');
      if (kinds.length === 0) {
        ctx.addIssue({ code: 'custom', message: 'names no kind' });
        return z.NEVER;
      }
      for (const kind of kinds) {
        if (!ID_PATTERN.test(kind)) {
          ctx.addIssue({
            code: 'custom',
            message: `kind ${JSON.stringify(kind)} must be 1 to 64 characters of [A-Za-z0-9_.:@-]`,
          });
          return z.NEVER;
        }
      }
      return Object.freeze([...new Set(kinds)]);
    })
    .describe(
      "the interaction counters' kinds (comma-separated); another kind is refused with 400",
    ),
  BUBBLE_INACTIVE_SCHEDULE: z
    .string()
    .regex(MS_OR_CRON, 'milliseconds or a node-cron expression')
    .default('23 * * * *')
    .describe('when the leader drops the marks of inactive users'),
  BUBBLE_INACTIVE_BATCH: int(1, 1_000_000)
    .default(10_000)
    .describe('most inactive users dropped per run'),
  BUBBLE_LARGE_GROUP: int(2, 10_000_000)
    .default(500)
    .describe('conversations above this size write once per message'),
  BUBBLE_WS_MAX_PAYLOAD: int(256, 1024 * 1024)
    .default(4096)
    .describe('largest WebSocket frame accepted, bytes'),
  BUBBLE_WS_PING_INTERVAL_MS: int(1000, 600_000)
    .default(25_000)
    .describe('protocol pings to every socket this often'),
  BUBBLE_WS_PONG_TIMEOUT_MS: int(500, 600_000)
    .default(8_000)
    .describe('a socket whose pong is later than this after a ping is terminated'),
  PORT: int(0, 65535).default(8080).describe('HTTP port'),
  BUBBLE_INTERNAL_PORT: int(0, 65535)
    .optional()
    .describe('port for /healthz, /readyz, /metrics when set'),
  BUBBLE_ADVERTISE_URL: z
    .string()
    .url()
    .regex(/^https?:\/\//, 'an http:// or https:// URL')
    .optional()
    .describe("this node's URL in the cluster's node list (dashboard, bubble status)"),
  BUBBLE_JWT_SECRET: z.string().min(1).optional().describe('HS256 secret for end-user tokens'),
  BUBBLE_JWT_AUDIENCE: z.string().min(1).optional().describe('required `aud` of end-user tokens'),
  BUBBLE_JWT_ISSUER: z.string().min(1).optional().describe('required `iss` of end-user tokens'),
  BUBBLE_JWT_PUBLIC_KEY: PUBLIC_KEY_PEM.optional().describe(
    "the platform's public key (PEM) for RS256/ES256 end-user tokens",
  ),
  BUBBLE_JWT_MAX_TOKEN_AGE: DURATION_SECONDS.optional().describe(
    'oldest `iat` accepted (requires `iat`), e.g. 24h',
  ),
  BUBBLE_API_KEY: z.string().min(1).optional().describe('platform API key (X-Api-Key)'),
  BUBBLE_ALLOWED_ORIGINS: ID_LIST.optional().describe('WebSocket Origin allowlist'),
  BUBBLE_TRUSTED_PROXIES: CIDR_LIST.optional().describe(
    'comma CIDRs of proxies whose X-Forwarded-For names the client',
  ),
  BUBBLE_WS_CONNECT_RATE: z.coerce
    .number()
    .positive()
    .max(1_000_000)
    .default(20)
    .describe('new WebSocket connections per second per client address'),
  BUBBLE_WS_CONNECT_BURST: int(1, 1_000_000)
    .default(50)
    .describe('burst of new WebSocket connections per client address'),
  BUBBLE_WS_DRAIN_RATE: int(1, 1_000_000)
    .default(2_000)
    .describe('sockets a draining gateway closes (1001) per second'),
  BUBBLE_WS_DRAIN_MAX_MS: int(0, 60_000)
    .default(5_000)
    .describe('longest a drain spreads its closes over; the shutdown deadline grows by it'),
  BUBBLE_CLIENT_USER_RATE: rate(5).describe(
    'client-route requests (polls, reads, conversation list, mutes) per second per user',
  ),
  BUBBLE_CLIENT_USER_BURST: int(1, 1_000_000)
    .default(40)
    .describe('burst of client-route requests per user'),
  BUBBLE_CLIENT_ADDRESS_RATE: rate(200).describe(
    'client-route requests per second per client address (many users may share a NAT)',
  ),
  BUBBLE_CLIENT_ADDRESS_BURST: int(1, 10_000_000)
    .default(1000)
    .describe('burst of client-route requests per client address'),
  BUBBLE_CLIENT_LIMIT_TRACKED: int(1000, 10_000_000)
    .default(100_000)
    .describe(
      'most users, and most addresses, whose client-route limits are tracked at once; past it the least recently seen are forgotten',
    ),
  BUBBLE_DEV: z
    .enum(['0', '1'])
    .default('0')
    .transform((value) => value === '1')
    .describe('1: development mode (generated secrets, /demo/token) on Redis or beyond loopback'),
  BUBBLE_PRESENCE_TTL_MS: int(1000, 3_600_000)
    .default(30_000)
    .describe('presence of users held by a gateway lapses this long after the gateway dies'),
  BUBBLE_POLL_INTERVAL_S: int(1, 3600).default(15).describe('poll interval advertised when calm'),
  BUBBLE_PUBSUB_CHECK_MS: int(0, 3_600_000)
    .default(2_000)
    .describe(
      'a gateway compares the messages published to it with those it heard this often (0: only on reconnects and gaps); a lost one costs at most this and one read',
    ),
  BUBBLE_GATEWAY_HEAP_TUNING: z
    .enum(['0', '1'])
    .default('1')
    .transform((value) => value === '1')
    .describe('1: `bubble gateway` keeps its heap at its live size (docs/operations.md)'),
  BUBBLE_INGEST_STREAM: z
    .enum(['0', '1'])
    .default('1')
    .transform((value) => value === '1')
    .describe(
      '1: a gateway on Redis consumes the ingest stream (docs/api.md, events through a Redis Stream)',
    ),
  BUBBLE_INGEST_PARTITIONS: int(1, 1024)
    .default(1)
    .describe('ingest stream partitions <prefix>:ingest:{i}, each its own hash tag'),
  BUBBLE_INGEST_CLAIM_MS: int(100, 86_400_000)
    .default(30_000)
    .describe('an ingest entry idle this long in a consumer is claimed by another'),
  BUBBLE_INGEST_MAX_DELIVERIES: int(1, 1000)
    .default(5)
    .describe('deliveries of an ingest entry before a failing one goes to the dead letters'),
  BUBBLE_INGEST_READ_COUNT: int(1, 10_000)
    .default(1000)
    .describe(
      'entries one XREADGROUP of a consumer takes; a read of posts and messages only is stored in one script call',
    ),
  BUBBLE_INGEST_BLOCK_MS: int(50, 60_000)
    .default(2_000)
    .describe(
      "longest a consumer's XREADGROUP blocks; a read silent for this plus 5 s is abandoned and its connection replaced",
    ),
  BUBBLE_WEBHOOK_URL: z
    .string()
    .url()
    .refine((value) => /^https?:/.test(value), 'must be an http(s) URL')
    .optional()
    .describe("the platform's push service: offline users' badges are POSTed here"),
  BUBBLE_WEBHOOK_SECRET: z
    .string()
    .min(32, 'must be at least 32 bytes')
    .optional()
    .describe('HMAC-SHA256 key of X-Bubble-Signature; required with BUBBLE_WEBHOOK_URL'),
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
            message:
              source === 'feed'
                ? "feed is not a webhook source: bubble keeps no index of an author's followers (a post never walks them), so it cannot tell whose badge a post changed"
                : `unknown source ${JSON.stringify(source)}; one of ${WEBHOOK_SOURCES.join(', ')}`,
          });
          return z.NEVER;
        }
      }
      return [...new Set(sources)] as WebhookSource[];
    })
    .describe('the sources whose changes are delivered to offline users'),
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
    .describe('longest delay between two attempts of a delivery'),
  BUBBLE_WEBHOOK_QUEUE_MAX: int(100, 100_000_000)
    .default(1_000_000)
    .describe('users waiting for a delivery beyond this are shed, oldest first'),
  BUBBLE_WEBHOOK_CONCURRENCY: int(1, 256)
    .default(8)
    .describe('webhook requests one gateway has in flight at once'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NODE_ENV: z.string().optional(),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const defined = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = configSchema.safeParse(defined);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const config = parsed.data;
  if (config.BUBBLE_WEBHOOK_URL !== undefined && config.BUBBLE_WEBHOOK_SECRET === undefined) {
    throw new ConfigError(
      'invalid configuration:\n  BUBBLE_WEBHOOK_SECRET: required with BUBBLE_WEBHOOK_URL (deliveries are signed with it)',
    );
  }
  if (config.BUBBLE_WEBHOOK_RETRY_MAX_MS < config.BUBBLE_WEBHOOK_RETRY_BASE_MS) {
    throw new ConfigError(
      'invalid configuration:\n  BUBBLE_WEBHOOK_RETRY_MAX_MS: must be at least BUBBLE_WEBHOOK_RETRY_BASE_MS',
    );
  }
  return Object.freeze(config);
}

export function isProduction(config: Config): boolean {
  return config.NODE_ENV === 'production';
}

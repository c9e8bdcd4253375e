import { parseCidrList, publicKeyAlgorithm } from '@bubble/gateway';
import { z } from 'zod';
import { sources, webhooks } from './config-endpoints.js';
import { int } from './config-values.js';
import { ID_PATTERN } from '@bubble/protocol';
import { KEY_PREFIX_PATTERN } from '@bubble/store';

const MS_OR_CRON = /^(\d+|(\S+\s+){4,5}\S+)$/;
const ID_LIST = z.string().transform((value) =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== ''),
);

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

/*
 * The variables by topic. Each field's description (and, for an optional one, `unset`: what its
 * absence means) is its row of docs/configuration.md, kept short (a table cell, at most 300
 * characters with the range the generator appends); a group's title and description head its table.
 */
const redis = z
  .object({
    REDIS_URL: z
      .string()
      .url()
      .optional()
      .describe('Redis to use; without it `bubble all` runs in memory'),
    REDIS_CLUSTER_NODES: ID_LIST.optional().describe(
      'comma-separated `host:port` seeds; selects Redis Cluster',
    ),
    BUBBLE_LOCK_REDIS_URLS: ID_LIST.optional().meta({
      description: 'comma-separated independent Redis masters for the Redlock quorum of the leases',
      unset: 'the main Redis',
    }),
    BUBBLE_KEY_PREFIX: z
      .string()
      .regex(KEY_PREFIX_PATTERN)
      .default('ub')
      .describe('prefix of every Redis key (1 to 32 characters of `[A-Za-z0-9_.:-]`)'),
  })
  .meta({ title: 'Redis', description: 'Where the state lives; every role reads these.' });

const sweeps = z
  .object({
    BUBBLE_POOLS: int(1, 10_000).default(100).describe('number of online-user pools'),
    BUBBLE_TICK: z
      .string()
      .regex(MS_OR_CRON, 'milliseconds or a node-cron expression')
      .default('1000')
      .describe('sweep period: milliseconds, or a node-cron expression'),
    BUBBLE_LEASE_MS: int(500, 600_000).default(10_000).describe('pool and leader lease'),
    BUBBLE_RECONCILE_RATE: int(0, 1_000_000)
      .default(50)
      .describe('held users a core rechecks against the stored sources per second (0: never)'),
    BUBBLE_START_RETRY_MAX_MS: int(500, 600_000)
      .default(15_000)
      .describe('longest wait between two attempts to reach the store at start (backoff cap)'),
  })
  .meta({
    title: 'Pools, sweeps and leases',
    description: 'bubble-server and bubble-core: who sweeps which online users, and how often.',
  });

const badgeRules = z
  .object({
    BUBBLE_LOOKBACK_DAYS: z.coerce
      .number()
      .positive()
      .max(365)
      .default(7)
      .describe("the feed's lookback (and fallback) window, days"),
    BUBBLE_FOLLOW_CAP: int(1, 1_000_000)
      .default(2000)
      .describe('most authors one user may follow (one more is 409 `UB_ERR_FOLLOW_CAP`)'),
    BUBBLE_TOPIC_CAP: int(1, 100_000)
      .default(200)
      .describe('most topics one user may follow (one more is 409 `UB_ERR_FOLLOW_CAP`)'),
    BUBBLE_DISPLAY_CAP: int(1, 1_000_000).default(99).describe('`display` shows `99+` above it'),
    BUBBLE_INACTIVE_DAYS: z.coerce
      .number()
      .positive()
      .max(3650)
      .default(30)
      .describe(
        'a user unseen this many days keeps only follows, memberships and conversation cursors; the rest of their state, counters included, is dropped',
      ),
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
        "the interaction counters' kinds (comma-separated ids); an event or read of another kind is refused with 400",
      ),
    BUBBLE_INACTIVE_SCHEDULE: z
      .string()
      .regex(MS_OR_CRON, 'milliseconds or a node-cron expression')
      .default('23 * * * *')
      .describe('when the leader drops the state of inactive users (milliseconds or node-cron)'),
    BUBBLE_INACTIVE_BATCH: int(1, 1_000_000)
      .default(10_000)
      .describe('most inactive users dropped per run'),
    BUBBLE_LARGE_GROUP: int(2, 10_000_000)
      .default(500)
      .describe(
        "a message to a conversation with more members is not written to each member's activity index; their lists merge it at read time",
      ),
  })
  .meta({ title: 'Badge rules', description: 'What the counts mean and how long state is kept.' });
const node = z
  .object({
    PORT: int(0, 65535).default(8080).describe('HTTP port'),
    BUBBLE_INTERNAL_PORT: int(0, 65535).optional().meta({
      description: 'serve `/healthz`, `/readyz`, `/metrics` and the dashboard here',
      unset: 'on `PORT`',
    }),
    BUBBLE_ADVERTISE_URL: z
      .string()
      .url()
      .regex(/^https?:\/\//, 'an http:// or https:// URL')
      .optional()
      .meta({
        description:
          "this node's URL in the cluster's node list (`GET /v1/cluster`, the dashboard, `bubble status`): what other hosts reach it at",
        unset: '`http://localhost:<port>`',
      }),
    BUBBLE_DEV: z
      .enum(['0', '1'])
      .default('0')
      .transform((value) => value === '1')
      .describe(
        '`1`: `bubble all` in development mode (generated secrets, `/demo/token`) also on Redis and on every interface; refused with `NODE_ENV=production`',
      ),
    BUBBLE_GATEWAY_HEAP_TUNING: z
      .enum(['0', '1'])
      .default('1')
      .transform((value) => value === '1')
      .describe(
        "`1`: `bubble gateway` turns off V8 pretenuring and compacts at every full GC, so its heap stays at its live size; `0` keeps V8's defaults (shorter full-GC pauses)",
      ),
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .describe('pino level; logs are JSON, readable lines when stdout is a terminal'),
    NODE_ENV: z.string().optional().describe('`production` never runs development mode'),
  })
  .meta({ title: 'The process', description: 'Ports, the node list, modes and logs.' });

const auth = z
  .object({
    BUBBLE_JWT_SECRET: z
      .string()
      .min(1)
      .optional()
      .describe('HS256 secret of end-user tokens (at least 32 bytes outside development mode)'),
    BUBBLE_JWT_AUDIENCE: z.string().min(1).optional().describe('required `aud` of end-user tokens'),
    BUBBLE_JWT_ISSUER: z.string().min(1).optional().describe('required `iss` of end-user tokens'),
    BUBBLE_JWT_PUBLIC_KEY: PUBLIC_KEY_PEM.optional().describe(
      "the platform's SPKI PEM public key for RS256/ES256 end-user tokens (then no secret is needed)",
    ),
    BUBBLE_JWT_MAX_TOKEN_AGE: DURATION_SECONDS.optional().describe(
      'oldest `iat` accepted (tokens must then carry `iat`): seconds, or `30m`, `12h`, `7d`',
    ),
    BUBBLE_API_KEY: z
      .string()
      .min(1)
      .optional()
      .describe(
        "the platform's `X-Api-Key` (at least 32 bytes outside development mode); `gateway`, and `all` outside development mode, require both secrets",
      ),
    BUBBLE_ALLOWED_ORIGINS: ID_LIST.optional().describe(
      'comma-separated WebSocket `Origin` allowlist; another Origin gets 403 at the upgrade',
    ),
    BUBBLE_TRUSTED_PROXIES: CIDR_LIST.optional().describe(
      'comma CIDRs (a bare address is one host) of proxies whose `X-Forwarded-For` names the client (the right-most untrusted address); from anywhere else the header is ignored',
    ),
  })
  .meta({
    title: 'Authentication and proxies',
    description: 'Who may call the gateway, and whom a request comes from.',
  });

const sockets = z
  .object({
    BUBBLE_WS_MAX_PAYLOAD: int(256, 1024 * 1024)
      .default(4096)
      .describe('largest WebSocket frame accepted, bytes'),
    BUBBLE_WS_PING_INTERVAL_MS: int(1000, 600_000)
      .default(25_000)
      .describe('protocol pings to every socket this often'),
    BUBBLE_WS_PONG_TIMEOUT_MS: int(500, 600_000)
      .default(8_000)
      .describe('a socket whose pong is later than this after a ping is terminated'),
    BUBBLE_WS_CONNECT_RATE: z.coerce
      .number()
      .positive()
      .max(1_000_000)
      .default(20)
      .describe('new WebSocket connections per second per client address'),
    BUBBLE_WS_CONNECT_BURST: int(1, 1_000_000)
      .default(50)
      .describe(
        'new WebSocket connections one client address may open at once; past it the upgrade is 429 with `Retry-After`',
      ),
    BUBBLE_WS_DRAIN_RATE: int(1, 1_000_000)
      .default(2_000)
      .describe('sockets a draining gateway (SIGTERM) closes with 1001 per second'),
    BUBBLE_WS_DRAIN_MAX_MS: int(0, 60_000)
      .default(5_000)
      .describe('longest a drain spreads its closes over; the shutdown deadline grows by it'),
    BUBBLE_CLIENT_USER_RATE: rate(5).describe(
      'client-route requests (polls, reads, conversation list, mutes) per second per user',
    ),
    BUBBLE_CLIENT_USER_BURST: int(1, 1_000_000)
      .default(40)
      .describe('client-route requests one user may make at once, over the rate'),
    BUBBLE_CLIENT_ADDRESS_RATE: rate(200).describe(
      'client-route requests per second per client address (many users may share a NAT)',
    ),
    BUBBLE_CLIENT_ADDRESS_BURST: int(1, 10_000_000)
      .default(1000)
      .describe('client-route requests one client address may make at once, over the rate'),
    BUBBLE_CLIENT_LIMIT_TRACKED: int(1000, 10_000_000)
      .default(100_000)
      .describe(
        'most users, and most addresses, whose client-route limits are tracked at once; past it the least recently seen are forgotten',
      ),
    BUBBLE_PRESENCE_TTL_MS: int(1000, 3_600_000)
      .default(30_000)
      .describe('presence of users held by a gateway lapses this long after the gateway dies'),
    BUBBLE_POLL_INTERVAL_S: int(1, 3600)
      .default(15)
      .describe('`X-Poll-Interval` when the gateway is calm (it grows under load)'),
    BUBBLE_PUBSUB_CHECK_MS: int(0, 3_600_000)
      .default(2_000)
      .describe(
        'a gateway compares the messages published to it with those it heard this often (0: only on reconnects and gaps); a lost one costs at most this and one read',
      ),
  })
  .meta({
    title: 'Gateway: sockets, polls and client limits',
    description: 'How a gateway holds its connections and limits its clients.',
  });

const ingest = z
  .object({
    BUBBLE_INGEST_STREAM: z
      .enum(['0', '1'])
      .default('1')
      .transform((value) => value === '1')
      .describe('`1`: a gateway on Redis consumes the ingest stream; `0`: this gateway does not'),
    BUBBLE_INGEST_PARTITIONS: int(1, 1024)
      .default(1)
      .describe(
        'ingest stream partitions `<prefix>:ingest:{i}`, each its own hash tag; platforms and gateways must agree',
      ),
    BUBBLE_INGEST_CLAIM_MS: int(100, 86_400_000)
      .default(30_000)
      .describe(
        "an ingest entry idle this long in a consumer is claimed by another; also the idle time after which a dead gateway's webhook job is claimed",
      ),
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
  })
  .meta({
    title: 'Ingest stream',
    description:
      'Events appended to a Redis Stream instead of sent over HTTP ([api.md](api.md#events-through-a-redis-stream)).',
  });

/** The configuration by topic, in the order docs/configuration.md lists it. */
export const CONFIG_GROUPS = [
  redis,
  sweeps,
  badgeRules,
  node,
  auth,
  sockets,
  ingest,
  webhooks,
  sources,
];

/**
 * Every environment variable a bubble role reads, with its default and meaning; docs/configuration.md
 * is generated from it (packages/cli/scripts/build-config-docs.ts). Parsed once at start; a bad
 * value stops the process naming the variable.
 */
export const configSchema = z.object({
  ...redis.shape,
  ...sweeps.shape,
  ...badgeRules.shape,
  ...node.shape,
  ...auth.shape,
  ...sockets.shape,
  ...ingest.shape,
  ...webhooks.shape,
  ...sources.shape,
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
  if (config.BUBBLE_SOURCES_URL !== undefined && config.BUBBLE_SOURCES_SECRET === undefined) {
    throw new ConfigError(
      'invalid configuration:\n  BUBBLE_SOURCES_SECRET: required with BUBBLE_SOURCES_URL (requests are signed with it)',
    );
  }
  if (config.BUBBLE_DIGEST_DAYS > config.BUBBLE_INACTIVE_DAYS) {
    throw new ConfigError(
      'invalid configuration:\n  BUBBLE_DIGEST_DAYS: must be at most BUBBLE_INACTIVE_DAYS (a user unseen longer is dropped)',
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

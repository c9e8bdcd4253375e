import type { Registry } from 'prom-client';
import type { BreakerSettings } from './circuit-breaker.js';
import type { SourcesCaps } from './sources-answer.js';

/** What the client logs through: a pino logger fits. */
export interface SourcesLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface SourcesClientOptions {
  /** The endpoint's URL; credentials in it become a Basic Authorization header, never logged. */
  url: string;
  /** The HMAC key of X-Bubble-Signature. */
  secret: string;
  /** The follow caps: an entry with more distinct ids than these is refused as invalid. */
  caps: SourcesCaps;
  /** One request, from sending to the whole answer; 2000. */
  timeoutMs?: number;
  /** Requests in flight at most; 16. */
  concurrency?: number;
  /** Users per request, 1 to 100; 100. */
  batchSize?: number;
  /**
   * How long new needs wait to share a request with needs arriving just after them; 0 waits for
   * the next turn of the event loop only; 1.
   */
  batchWindowMs?: number;
  /** Backoff (full jitter) between attempts: base and ceiling; 100 and 5000 ms. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Attempts of a fetch given no deadline; 4. */
  maxAttempts?: number;
  /** Defaults: 5 failed requests in a row open it for 5 s, doubling to 60 s. */
  breaker?: Partial<BreakerSettings>;
  /** An answer's body over this is refused (invalid); 16 MiB. */
  maxBodyBytes?: number;
  /** A kind of warning (a refused entry, a failed request) is logged at most once per this; 10 s. */
  logEveryMs?: number;
  registry?: Registry;
  log?: SourcesLog;
  /** Wall-clock ms (Date.now) for deadlines, the breaker's pause and the signature. */
  clock?: () => number;
  /** [0, 1) for the backoff's jitter. */
  random?: () => number;
}

export const MAX_SOURCES_BATCH = 100;

export type ResolvedSourcesOptions = Required<
  Omit<SourcesClientOptions, 'registry' | 'log' | 'breaker' | 'clock' | 'random'>
> & { breaker: BreakerSettings };

/** The options with their defaults; a bad one throws a RangeError naming it. */
export function resolveSourcesOptions(options: SourcesClientOptions): ResolvedSourcesOptions {
  const o: ResolvedSourcesOptions = {
    url: options.url,
    secret: options.secret,
    caps: options.caps,
    timeoutMs: options.timeoutMs ?? 2_000,
    concurrency: options.concurrency ?? 16,
    batchSize: options.batchSize ?? MAX_SOURCES_BATCH,
    batchWindowMs: options.batchWindowMs ?? 1,
    retryBaseMs: options.retryBaseMs ?? 100,
    retryMaxMs: options.retryMaxMs ?? 5_000,
    maxAttempts: options.maxAttempts ?? 4,
    maxBodyBytes: options.maxBodyBytes ?? 16 * 1024 * 1024,
    logEveryMs: options.logEveryMs ?? 10_000,
    breaker: {
      failures: options.breaker?.failures ?? 5,
      pauseMs: options.breaker?.pauseMs ?? 5_000,
      maxPauseMs: options.breaker?.maxPauseMs ?? 60_000,
    },
  };
  const positiveInteger = (value: number, name: string) => {
    if (!Number.isInteger(value) || value < 1)
      throw new RangeError(`sources client: ${name} must be an integer ≥ 1`);
  };
  positiveInteger(o.concurrency, 'concurrency');
  positiveInteger(o.timeoutMs, 'timeoutMs');
  positiveInteger(o.maxAttempts, 'maxAttempts');
  positiveInteger(o.caps.follows, 'caps.follows');
  positiveInteger(o.caps.topics, 'caps.topics');
  positiveInteger(o.maxBodyBytes, 'maxBodyBytes');
  positiveInteger(o.breaker.failures, 'breaker.failures');
  if (o.batchSize < 1 || o.batchSize > MAX_SOURCES_BATCH || !Number.isInteger(o.batchSize))
    throw new RangeError(`sources client: batchSize must be an integer 1 to ${MAX_SOURCES_BATCH}`);
  if (!(o.batchWindowMs >= 0)) throw new RangeError('sources client: batchWindowMs must be ≥ 0');
  if (!(o.retryBaseMs > 0) || !(o.retryMaxMs >= o.retryBaseMs))
    throw new RangeError('sources client: retryBaseMs must be > 0 and ≤ retryMaxMs');
  if (!(o.breaker.pauseMs > 0) || !(o.breaker.maxPauseMs >= o.breaker.pauseMs))
    throw new RangeError('sources client: breaker.pauseMs must be > 0 and ≤ breaker.maxPauseMs');
  if (!(o.logEveryMs >= 0)) throw new RangeError('sources client: logEveryMs must be ≥ 0');
  if (o.secret.length === 0) throw new RangeError('sources client: secret must not be empty');
  let protocol: string;
  try {
    protocol = new URL(o.url).protocol;
  } catch {
    throw new RangeError('sources client: url is not a URL');
  }
  if (protocol !== 'http:' && protocol !== 'https:')
    throw new RangeError('sources client: url must be http or https');
  return o;
}

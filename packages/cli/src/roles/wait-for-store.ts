import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { withTimeout } from '@bubble/protocol';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

export interface Backoff {
  /** The first retry's nominal delay. */
  initialMs: number;
  /** No retry waits longer than this. */
  maxMs: number;
}

/** The message of the one line logged per failed attempt. */
export const WAITING_LOG = 'waiting for the store';

/** How long one reachability check may take before it counts as failed. */
const ATTEMPT_TIMEOUT_MS = 2_000;
/**
 * How long a lock server is given to connect within an attempt: shorter than the attempt, so a
 * quorum that does not answer is reported as such (with its count) rather than as a timeout.
 * ioredis' reconnect delay grows to 2 s, so a refused server may stay silent that long.
 */
const LOCK_CONNECT_MS = ATTEMPT_TIMEOUT_MS / 2;

/**
 * The wait before retry `attempt` (1-based): doubling from `initialMs` up to `maxMs`, of which
 * a random half is kept (equal jitter), so restarted replicas do not retry in step.
 */
export function backoffDelay(attempt: number, backoff: Backoff, random = Math.random): number {
  const nominal = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(nominal / 2 + (random() * nominal) / 2);
}

/**
 * Resolves once `check` succeeds, trying again after each failure with backoff and logging one
 * line per failed attempt. Rejects only when `signal` aborts (a shutdown during the wait).
 */
export async function waitUntilReachable(
  check: () => Promise<void>,
  options: { backoff: Backoff; logger: Logger; signal?: AbortSignal },
): Promise<void> {
  const { backoff, logger, signal } = options;
  const startedAt = Date.now();
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    try {
      await withTimeout(check(), ATTEMPT_TIMEOUT_MS);
      if (attempt > 1) {
        logger.info(
          { attempts: attempt, waitedMs: Date.now() - startedAt },
          'the store is reachable',
        );
      }
      return;
    } catch (err) {
      signal?.throwIfAborted();
      const retryInMs = backoffDelay(attempt, backoff);
      logger.warn(
        { attempt, retryInMs, reason: err instanceof Error ? err.message : String(err) },
        WAITING_LOG,
      );
      await delay(retryInMs, undefined, { signal });
    }
  }
}

/**
 * Resolves when a majority of `clients` answer PING: the quorum Redlock needs. Clients without
 * an offline queue refuse commands until connected, so each is first given the attempt's time
 * to connect.
 */
export async function quorumAnswers(clients: readonly Redis[]): Promise<void> {
  const answers = await Promise.allSettled(clients.map((client) => answersPing(client)));
  const up = answers.filter((answer) => answer.status === 'fulfilled').length;
  const needed = Math.floor(clients.length / 2) + 1;
  if (up < needed) {
    const failure = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    const reason = failure ? String((failure.reason as Error)?.message ?? failure.reason) : '';
    throw new Error(`lock quorum: ${up} of ${clients.length} masters answer (${reason})`);
  }
}

async function answersPing(client: Redis): Promise<void> {
  if (client.status !== 'ready') {
    // Rejects on the client's next 'error' (a refused connection) or after LOCK_CONNECT_MS.
    await once(client, 'ready', { signal: AbortSignal.timeout(LOCK_CONNECT_MS) });
  }
  await client.ping();
}

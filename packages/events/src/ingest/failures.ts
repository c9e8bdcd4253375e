import { BubbleError } from '@bubble/protocol';

/**
 * What a failed apply means for its entries:
 *   invalid      the entry can never apply (validation, a 4xx): dead-lettered at once
 *   unavailable  the store did not answer: the batch is kept and retried in place, uncounted
 *   failed       anything else: left pending, retried on its next delivery up to the cap
 */
export type FailureKind = 'invalid' | 'unavailable' | 'failed';

const UNAVAILABLE =
  /Connection is closed|Command timed out|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|max retries per request|Stream isn't writeable|enableOfflineQueue|CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|Failed to refresh slots cache|None of startup nodes is available/i;

export function failureKind(err: unknown): FailureKind {
  if (err instanceof BubbleError) {
    if (err.code === 'UB_ERR_UNAVAILABLE' || err.code === 'UB_ERR_RATE_LIMITED') {
      return 'unavailable';
    }
    return err.status >= 400 && err.status < 500 ? 'invalid' : 'failed';
  }
  if (err instanceof Error && UNAVAILABLE.test(err.message)) return 'unavailable';
  return 'failed';
}

export function isNoGroup(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOGROUP');
}

/** One line for a dead letter's `error` field: the code when there is one, then the message. */
export function describeFailure(err: unknown): string {
  const text =
    err instanceof BubbleError
      ? `${err.code}: ${err.message}`
      : err instanceof Error
        ? err.message
        : String(err);
  return text.length > 1000 ? `${text.slice(0, 1000)}…` : text;
}

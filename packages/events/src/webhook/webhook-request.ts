import { signWebhook } from './signature.js';

/** What one POST to the push service came to. */
export type RequestOutcome =
  | { kind: 'ok'; status: number }
  | { kind: 'retry'; status: number | null; error: string; retryAfterMs: number | null }
  | { kind: 'dead'; status: number; error: string };

/** Retry-After is at most honoured this far ahead: a day. */
const RETRY_AFTER_MAX_MS = 86_400_000;

/** The webhook's URL without credentials (fetch refuses them) and what they stand for. */
export interface WebhookTarget {
  url: string;
  /** scheme://host:port, what logs name. */
  origin: string;
  authorization: string | undefined;
}

export function webhookTarget(raw: string): WebhookTarget {
  const url = new URL(raw);
  let authorization: string | undefined;
  if (url.username || url.password) {
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  return { url: url.toString(), origin: url.origin, authorization };
}

/**
 * POSTs `body` signed at this moment. 2xx: ok; 408, 429, 5xx, a timeout or a network error:
 * retry (with the Retry-After asked for, if any); any other status: dead. Global fetch (undici)
 * keeps connections alive between requests.
 */
export async function postDelivery(
  target: WebhookTarget,
  secret: string,
  id: string,
  body: string,
  timeoutMs: number,
  nowMs: number,
): Promise<RequestOutcome> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'idempotency-key': id,
    'x-bubble-signature': signWebhook(secret, body, nowMs / 1000),
  };
  if (target.authorization) headers.authorization = target.authorization;
  let response: Response;
  try {
    response = await fetch(target.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    // Read the answer whole so the connection goes back to the pool.
    await response.arrayBuffer();
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const error = timedOut
      ? `no answer within ${timeoutMs} ms`
      : (cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err)));
    return { kind: 'retry', status: null, error, retryAfterMs: null };
  }
  const { status } = response;
  if (status >= 200 && status < 300) return { kind: 'ok', status };
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
    return { kind: 'retry', status, error: `HTTP ${status}`, retryAfterMs };
  }
  return { kind: 'dead', status, error: `HTTP ${status}` };
}

/** Retry-After in seconds or as an HTTP date, in ms from now; null when absent or unreadable. */
function parseRetryAfter(value: string | null, nowMs = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    // An HTTP date is on the receiver's clock, closer to this host's than to the store's.
    ms = at - nowMs;
  }
  return Math.min(RETRY_AFTER_MAX_MS, Math.max(0, ms));
}

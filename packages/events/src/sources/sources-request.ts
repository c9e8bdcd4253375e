import { signWebhook } from '../webhook/signature.js';
import type { WebhookTarget } from '../webhook/webhook-request.js';
import { parseSourcesBody } from './sources-answer.js';

/** What one POST to the sources endpoint came to, named as the requests metric counts it. */
export type SourcesRequestResult =
  | { kind: 'ok'; users: Readonly<Record<string, unknown>> }
  | { kind: 'error' | 'timeout' | 'invalid'; error: string };

export interface SourcesRequest {
  target: WebhookTarget;
  secret: string;
  users: readonly string[];
  timeoutMs: number;
  maxBodyBytes: number;
  nowMs: number;
  /** Aborted by the client's close(); the request's own timeout is separate. */
  controller: AbortController;
}

/**
 * POSTs `{"users":[…]}` signed at `nowMs`. 200 with the answer's shape: ok; a body that is not
 * that shape (or over `maxBodyBytes`): invalid; any other status or a network error: error; no
 * whole answer within `timeoutMs`: timeout. Never throws.
 */
export async function postSources(request: SourcesRequest): Promise<SourcesRequestResult> {
  const { target, timeoutMs, controller } = request;
  const body = `{"users":${JSON.stringify(request.users)}}`;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-bubble-signature': signWebhook(request.secret, body, request.nowMs / 1000),
  };
  if (target.authorization) headers.authorization = target.authorization;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  try {
    const response = await fetch(target.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: controller.signal,
    });
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => {});
      return { kind: 'error', error: `HTTP ${response.status}` };
    }
    const text = await readBounded(response, request.maxBodyBytes);
    if (text === null)
      return { kind: 'invalid', error: `the answer is over ${request.maxBodyBytes} bytes` };
    const parsed = parseSourcesBody(text);
    return parsed.ok
      ? { kind: 'ok', users: parsed.users }
      : { kind: 'invalid', error: parsed.error };
  } catch (err) {
    if (timedOut) return { kind: 'timeout', error: `no whole answer within ${timeoutMs} ms` };
    if (controller.signal.aborted) return { kind: 'error', error: 'the client closed' };
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const error =
      cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    return { kind: 'error', error };
  } finally {
    clearTimeout(timer);
  }
}

/** The body as text, read as a stream and given up (null) past `maxBytes`. */
async function readBounded(response: Response, maxBytes: number): Promise<string | null> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    return null;
  }
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

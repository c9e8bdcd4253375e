import http from 'node:http';
import https from 'node:https';
import { signWebhook } from '../webhook/signature.js';
import type { WebhookTarget } from '../webhook/webhook-request.js';
import { parseSourcesBody } from './sources-answer.js';

/** What one POST to the sources endpoint came to, named as the requests metric counts it. */
export type SourcesRequestResult =
  | { kind: 'ok'; users: Readonly<Record<string, unknown>> }
  | { kind: 'error' | 'timeout' | 'invalid'; error: string };

export interface SourcesRequest {
  target: WebhookTarget;
  /** Keeps the connections to the endpoint alive between requests (sourcesAgent). */
  agent: http.Agent;
  secret: string;
  users: readonly string[];
  timeoutMs: number;
  maxBodyBytes: number;
  nowMs: number;
  /** Aborted by the client's close(); the request's own timeout is separate. */
  controller: AbortController;
}

/**
 * The agent of one client's requests: connections kept alive (an idle one does not keep the
 * process alive). node:http rather than the global fetch: on a cold start's path, fetch and its
 * web streams cost 0.5–0.9 ms more at the median and several ms at p99 (`bench rehydrate`).
 */
export function sourcesAgent(target: WebhookTarget): http.Agent {
  const options = { keepAlive: true };
  return target.url.startsWith('https:') ? new https.Agent(options) : new http.Agent(options);
}

/**
 * POSTs `{"users":[…]}` signed at `nowMs`. 200 with the answer's shape: ok; a body that is not
 * that shape (or over `maxBodyBytes`): invalid; any other status (redirects are not followed)
 * or a network error: error; no whole answer within `timeoutMs`: timeout. Never throws.
 */
export function postSources(request: SourcesRequest): Promise<SourcesRequestResult> {
  const { target, timeoutMs, controller, maxBodyBytes } = request;
  const body = `{"users":${JSON.stringify(request.users)}}`;
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-bubble-signature': signWebhook(request.secret, body, request.nowMs / 1000),
  };
  if (target.authorization) headers.authorization = target.authorization;
  return new Promise((resolve) => {
    const transport = target.url.startsWith('https:') ? https : http;
    const req = transport.request(target.url, { method: 'POST', headers, agent: request.agent });
    let settled = false;
    const finish = (result: SourcesRequestResult, destroy = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      controller.signal.removeEventListener('abort', onAbort);
      if (destroy) req.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ kind: 'timeout', error: `no whole answer within ${timeoutMs} ms` }, true),
      timeoutMs,
    );
    const onAbort = () => finish({ kind: 'error', error: 'the client closed' }, true);
    controller.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish({ kind: 'error', error: err.code ?? err.message }),
    );
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        // Drained, so the connection serves the next request.
        res.resume();
        return finish({ kind: 'error', error: `HTTP ${res.statusCode}` });
      }
      const overSize = {
        kind: 'invalid',
        error: `the answer is over ${maxBodyBytes} bytes`,
      } as const;
      if (Number(res.headers['content-length']) > maxBodyBytes) return finish(overSize, true);
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBodyBytes) finish(overSize, true);
        else chunks.push(chunk);
      });
      res.on('error', (err: NodeJS.ErrnoException) =>
        finish({ kind: 'error', error: err.code ?? err.message }),
      );
      res.on('end', () => {
        if (settled) return;
        const parsed = parseSourcesBody(Buffer.concat(chunks, size).toString('utf8'));
        finish(
          parsed.ok
            ? { kind: 'ok', users: parsed.users }
            : { kind: 'invalid', error: parsed.error },
        );
      });
    });
    if (controller.signal.aborted) onAbort();
    else req.end(body);
  });
}

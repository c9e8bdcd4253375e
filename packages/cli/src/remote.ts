import { InvalidArgumentError } from 'commander';
import { isProduction, type Config } from './config.js';
import { loadDevSecrets } from './dev-secrets.js';

/**
 * What `bubble status` and `bubble simulate` share: where the running gateway is, the platform
 * key to talk to it, and HTTP calls with bounded time and size that never send the key anywhere
 * but that gateway (no redirects are followed) and never put it in a URL or a message.
 */

export class RemoteError extends Error {
  override readonly name = 'RemoteError';
}

const MAX_URL_LENGTH = 2048;

/**
 * The gateway's base URL: `--url`, else BUBBLE_URL, else http://127.0.0.1:$PORT. Only http(s),
 * no user info (credentials do not go in URLs), no query or fragment; a path prefix is kept.
 */
function resolveBaseUrl(flag: string | undefined, config: Config): URL {
  const fromEnv = process.env.BUBBLE_URL?.trim();
  const text = flag ?? (fromEnv ? fromEnv : undefined);
  if (text === undefined) {
    if (config.PORT === 0) throw new RemoteError('PORT is 0; pass --url or set BUBBLE_URL');
    return new URL(`http://127.0.0.1:${config.PORT}/`);
  }
  const origin = flag !== undefined ? '--url' : 'BUBBLE_URL';
  return parseBaseUrl(text, origin);
}

function parseBaseUrl(text: string, origin = '--url'): URL {
  if (text.length > MAX_URL_LENGTH) throw new RemoteError(`${origin} is too long`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RemoteError(`${origin} is not a URL (e.g. http://127.0.0.1:8080)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RemoteError(`${origin} must be an http:// or https:// URL`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new RemoteError(`${origin} must not carry credentials; use BUBBLE_API_KEY`);
  }
  if (url.search !== '' || url.hash !== '') {
    throw new RemoteError(`${origin} must not have a query or fragment`);
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** For commander: validates `--url` as it is parsed. */
export function urlOption(text: string): string {
  try {
    parseBaseUrl(text);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return text;
}

/** `path` (no leading slash) under the base URL. */
export function endpoint(base: URL, path: string): URL {
  return new URL(path, base);
}

/** The base URL as shown to people: origin and path, nothing else. */
export function showUrl(base: URL): string {
  return `${base.origin}${base.pathname === '/' ? '' : base.pathname.replace(/\/$/, '')}`;
}

/** The running gateway a command talks to, and the platform key it uses there. */
export interface RemoteTarget {
  base: URL;
  apiKey: string;
  /** Where the key came from, for messages (never the key). */
  keySource: string;
}

/** The gateway of `--url` (see resolveBaseUrl) and the platform key of `config`. */
export function remoteTarget(flag: string | undefined, config: Config): RemoteTarget {
  return {
    base: resolveBaseUrl(flag, config),
    apiKey: platformKey(config),
    keySource: keySource(config),
  };
}

/** The platform key: BUBBLE_API_KEY, else the development one `bubble all` keeps here. */
function platformKey(config: Config): string {
  if (config.BUBBLE_API_KEY) return config.BUBBLE_API_KEY;
  const dev = isProduction(config) ? null : loadDevSecrets();
  if (!dev) {
    throw new RemoteError(
      'no API key: set BUBBLE_API_KEY (or run this where `bubble all` keeps its development secrets in .bubble-dev/)',
    );
  }
  return dev.apiKey;
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
  /** Largest answer body read; a longer one is an error. */
  maxBytes?: number;
  signal?: AbortSignal;
}

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * One HTTP call with a deadline and a bounded answer. Network failures become a RemoteError
 * naming the URL and the cause; HTTP statuses are returned for the caller to judge.
 */
export async function call(url: URL, options: CallOptions = {}): Promise<CallResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const signals = [AbortSignal.timeout(timeoutMs)];
  if (options.signal) signals.push(options.signal);
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  let body: string | undefined;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method: options.method ?? 'GET',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.any(signals),
    });
  } catch (err) {
    if (options.signal?.aborted) throw new RemoteError('stopped');
    const cause = err as Error & { cause?: { code?: string; message?: string } };
    const why =
      cause.name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : (cause.cause?.code ?? cause.cause?.message ?? cause.message);
    throw new RemoteError(`cannot reach ${url.origin}: ${why}`);
  }
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    throw new RemoteError(
      `${url.origin} answered ${res.status} (a redirect); not followed, pass the gateway's own URL`,
    );
  }
  const text = await readBounded(res, options.maxBytes ?? 8 * 1024 * 1024, url);
  return { status: res.status, headers: res.headers, text };
}

async function readBounded(res: Response, maxBytes: number, url: URL): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    throw new RemoteError(`${url.origin} answered more than ${maxBytes} bytes`);
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new RemoteError(`${url.origin} answered more than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The contract's error message of an answer, if it has one (for people, bounded). */
export function errorMessage(result: CallResult): string {
  try {
    const body = JSON.parse(result.text) as { error?: { code?: unknown; message?: unknown } };
    const { code, message } = body.error ?? {};
    if (typeof message === 'string') {
      return printable(`${typeof code === 'string' ? `${code}: ` : ''}${message}`, 300);
    }
  } catch {
    // not JSON
  }
  return `HTTP ${result.status}`;
}

/** Control characters out (a server's strings go to a terminal), and a length bound. */
export function printable(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}

/** 401 and 403 as one clear message; the key itself is never shown. */
export function unauthorized(base: URL, result: CallResult, source: string): RemoteError {
  return new RemoteError(
    `unauthorized: ${showUrl(base)} refused the API key from ${source} (${errorMessage(result)})`,
  );
}

/** Where the key came from, for messages (never the key). */
function keySource(config: Config): string {
  return config.BUBBLE_API_KEY ? 'BUBBLE_API_KEY' : '.bubble-dev/secrets.json';
}

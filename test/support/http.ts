/**
 * One HTTP call of a test, whichever gateway it goes to (in-process or a child process): a
 * body sent as JSON, the platform key or a user's token as the header the gateway reads, the
 * answer read whole.
 */

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
}

export interface CallOptions {
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is (no JSON encoding). */
  rawBody?: string;
  /** A platform call: sent as X-Api-Key. */
  apiKey?: string;
  /** An end-user call: the user's JWT, sent as a Bearer token. */
  token?: string;
  /** Sent last, so they win over the ones above. */
  headers?: Record<string, string>;
}

export async function httpCall(
  base: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey;
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  Object.assign(headers, options.headers);
  const res = await fetch(base + path, { method, headers, body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** httpCall to a rig's gateway (anything with a url). */
export function call(
  gateway: { url: string },
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply> {
  return httpCall(gateway.url, method, path, options);
}

/** The reply's body as JSON; undefined when it is empty. */
export function jsonBody(reply: Reply): unknown {
  return reply.text === '' ? undefined : (JSON.parse(reply.text) as unknown);
}

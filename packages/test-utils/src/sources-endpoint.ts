/**
 * A real sources endpoint (docs/api.md, "Sources endpoint") on 127.0.0.1, answering from a graph
 * the test owns and mutates, for the suite and the benchmarks. It checks each request's
 * signature, records every request, and can be switched at run time to misbehave:
 *
 *   endpoint.setMode({ kind: 'fail' }, 2)        the next two requests get a 500, then ok again
 *   endpoint.setMode({ kind: 'hang' })           requests are never answered (until close)
 *   endpoint.setMode({ kind: 'over-cap', cap: 5, users: ['bob'] })
 *
 * The signature is checked here with node:crypto rather than @bubble/events' verifyWebhook:
 * test-utils depends on no workspace package, and an independent check is what a platform does.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One user's sources as the platform holds them. */
export interface SourcesGraphEntry {
  follows: string[];
  topics: string[];
  readAt?: number;
  noticesSeen?: number;
}

export type SourcesEndpointMode =
  | { kind: 'ok' }
  /** Answers as `ok` after `delayMs`. */
  | { kind: 'slow'; delayMs: number }
  /** Answers `status` (500) without an answer body. */
  | { kind: 'fail'; status?: number }
  /** Never answers; the connection stays open until close(). */
  | { kind: 'hang' }
  /** Answers 200 with a body that is not JSON. */
  | { kind: 'garbage' }
  /** `users` get `cap + 1` distinct follows (and topics); the others as `ok`. */
  | { kind: 'over-cap'; cap: number; users: readonly string[] }
  /** `users` get a follow and a topic that break the id grammar; the others as `ok`. */
  | { kind: 'bad-ids'; users: readonly string[] };

export interface SourcesEndpointRequest {
  /** The users asked for, in the request's order (empty when the body was unreadable). */
  users: string[];
  /** Date.now() when the request's body had arrived. */
  at: number;
  signatureValid: boolean;
  /** The X-Bubble-Signature header as received. */
  signature: string | undefined;
  contentType: string | undefined;
  /** The raw request body. */
  body: string;
  /** The mode that answered it; 401, 405, 400 and 413 are answered before any mode. */
  mode: SourcesEndpointMode['kind'] | 'refused';
}

export interface SourcesEndpointOptions {
  /** The HMAC key of X-Bubble-Signature: a request that does not verify gets 401. */
  secret: string;
  /** The graph answered from; the test may keep mutating it. A new empty one by default. */
  graph?: Map<string, SourcesGraphEntry>;
  mode?: SourcesEndpointMode;
  /** Keep every request in `requests`; a long benchmark may turn it off. Default true. */
  record?: boolean;
  /** How far a signature's timestamp may be from now; 300 s as docs/api.md. */
  toleranceS?: number;
}

export interface SourcesEndpoint {
  /** `http://127.0.0.1:<port>/sources` */
  readonly url: string;
  readonly graph: Map<string, SourcesGraphEntry>;
  readonly requests: readonly SourcesEndpointRequest[];
  /** Requests received and not answered yet, and the most there were at once. */
  readonly inFlight: number;
  readonly maxInFlight: number;
  readonly mode: SourcesEndpointMode;
  /** Answers with `mode` from the next request on; after `times` requests, `ok` again. */
  setMode(mode: SourcesEndpointMode, times?: number): void;
  /** Forgets the recorded requests and the most in flight. */
  resetRequests(): void;
  /** Stops listening and drops every connection, hanging ones included. */
  close(): Promise<void>;
}

const MAX_REQUEST_BYTES = 1024 * 1024;

export async function startSourcesEndpoint(
  options: SourcesEndpointOptions,
): Promise<SourcesEndpoint> {
  const endpoint = new Endpoint(options);
  await endpoint.listen();
  return endpoint;
}

class Endpoint implements SourcesEndpoint {
  readonly graph: Map<string, SourcesGraphEntry>;
  readonly requests: SourcesEndpointRequest[] = [];
  inFlight = 0;
  maxInFlight = 0;
  mode: SourcesEndpointMode;
  private modeLeft = Infinity;
  private readonly server: Server;
  private readonly timers = new Set<NodeJS.Timeout>();
  private port = 0;

  constructor(private readonly options: SourcesEndpointOptions) {
    this.graph = options.graph ?? new Map();
    this.mode = options.mode ?? { kind: 'ok' };
    this.server = createServer((req, res) => this.handle(req, res));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/sources`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  setMode(mode: SourcesEndpointMode, times = Infinity): void {
    this.mode = mode;
    this.modeLeft = times;
  }

  resetRequests(): void {
    this.requests.length = 0;
    this.maxInFlight = this.inFlight;
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.on('close', () => this.inFlight--);
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
    });
    req.on('end', () => this.answer(req, res, Buffer.concat(chunks), size));
  }

  private answer(req: IncomingMessage, res: ServerResponse, raw: Buffer, size: number): void {
    const body = raw.toString('utf8');
    const header = req.headers['x-bubble-signature'];
    const signatureValid = verify(
      this.options.secret,
      typeof header === 'string' ? header : undefined,
      raw,
      this.options.toleranceS ?? 300,
    );
    const users = askedUsers(body);
    const record: SourcesEndpointRequest = {
      users: users ?? [],
      at: Date.now(),
      signatureValid,
      signature: typeof header === 'string' ? header : undefined,
      contentType: req.headers['content-type'],
      body,
      mode: 'refused',
    };
    if (this.options.record !== false) this.requests.push(record);
    if (req.method !== 'POST') return refuse(res, 405, 'POST only');
    if (size > MAX_REQUEST_BYTES) return refuse(res, 413, 'body too large');
    if (!signatureValid) return refuse(res, 401, 'bad X-Bubble-Signature');
    if (users === null) return refuse(res, 400, 'the body is not {"users":[…]}');
    const mode = this.mode;
    record.mode = mode.kind;
    if (mode.kind !== 'ok' && --this.modeLeft <= 0) this.setMode({ kind: 'ok' });
    switch (mode.kind) {
      case 'ok':
      case 'over-cap':
      case 'bad-ids':
        return send(res, 200, this.answerBody(users, mode));
      case 'slow': {
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          send(res, 200, this.answerBody(users, mode));
        }, mode.delayMs);
        this.timers.add(timer);
        return;
      }
      case 'fail':
        return refuse(res, mode.status ?? 500, 'failing on purpose');
      case 'hang':
        return;
      case 'garbage':
        return send(res, 200, '{"users":{"oops" this is not JSON');
    }
  }

  /** `{"users":{…}}` for the asked users the graph holds, built as a string for speed. */
  private answerBody(users: readonly string[], mode: SourcesEndpointMode): string {
    const parts: string[] = [];
    for (const user of users) {
      let entry = this.graph.get(user);
      if (mode.kind === 'over-cap' && mode.users.includes(user)) {
        const ids = Array.from({ length: mode.cap + 1 }, (_, i) => `${user}.over${i}`);
        entry = { ...entry, follows: ids, topics: ids };
      } else if (mode.kind === 'bad-ids' && mode.users.includes(user)) {
        const follows = entry?.follows ?? [];
        entry = { ...entry, follows: [...follows, 'not an id!'], topics: ['bad"topic'] };
      }
      if (entry === undefined) continue;
      let part = `${JSON.stringify(user)}:{"follows":${JSON.stringify(entry.follows)},"topics":${JSON.stringify(entry.topics)}`;
      if (entry.readAt !== undefined) part += `,"readAt":${entry.readAt}`;
      if (entry.noticesSeen !== undefined) part += `,"noticesSeen":${entry.noticesSeen}`;
      parts.push(part + '}');
    }
    return `{"users":{${parts.join(',')}}}`;
  }
}

function askedUsers(body: string): string[] | null {
  try {
    const parsed = JSON.parse(body) as { users?: unknown };
    const users = parsed?.users;
    if (!Array.isArray(users) || !users.every((u) => typeof u === 'string')) return null;
    return users as string[];
  } catch {
    return null;
  }
}

function verify(secret: string, header: string | undefined, raw: Buffer, toleranceS: number) {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!match) return false;
  const t = Number(match[1]);
  if (Math.abs(Date.now() / 1000 - t) > toleranceS) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(raw).digest();
  return timingSafeEqual(Buffer.from(match[2]!, 'hex'), expected);
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function refuse(res: ServerResponse, status: number, message: string): void {
  send(res, status, JSON.stringify({ error: { message } }));
}

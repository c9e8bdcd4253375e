/**
 * A TCP proxy in front of a redis-server that can lose one pub/sub message on its way to a
 * subscriber while the connection stays up: what a lost message without a reconnect looks like
 * to the subscriber. Everything else passes unchanged. The replies of every connection are
 * read as RESP values (ioredis speaks RESP3 when the server does), so that a message is dropped
 * whole; `upstreamPorts` are the local ports
 * of its connections to the server (CLIENT LIST names them by `addr`).
 */
import net from 'node:net';
import { LocalRedisProxy } from './redis-proxy-parts.js';

export class MessageDroppingProxy extends LocalRedisProxy {
  private armed: { channel: RegExp; onDrop: (channel: string) => void } | undefined;
  private readonly upstreams = new Set<net.Socket>();

  /** The local ports of the proxy's live connections to the server. */
  get upstreamPorts(): Set<number> {
    return new Set([...this.upstreams].flatMap((s) => (s.localPort ? [s.localPort] : [])));
  }

  /** Drops the next message published on a channel matching `channel`; resolves with it. */
  dropNext(channel: RegExp): Promise<string> {
    return new Promise((resolve) => {
      this.armed = { channel, onDrop: resolve };
    });
  }

  protected connect(client: net.Socket): void {
    const upstream = this.linkUpstream(client, () => this.upstreams.delete(upstream));
    this.upstreams.add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let at = 0;
      const out: Buffer[] = [];
      for (;;) {
        const end = valueEnd(pending, at);
        if (end < 0) break;
        if (!this.drops(pending, at)) out.push(pending.subarray(at, end));
        at = end;
      }
      pending = pending.subarray(at);
      // A subscriber that stops reading stops the server's writes too, as without the proxy.
      if (out.length > 0 && !client.write(Buffer.concat(out))) {
        upstream.pause();
        client.once('drain', () => upstream.resume());
      }
    });
  }

  /** Whether the value at `at` is the message the proxy is armed to drop. */
  private drops(buf: Buffer, at: number): boolean {
    const armed = this.armed;
    if (!armed || (buf[at] !== PUSH && buf[at] !== ARRAY)) return false;
    const [kind, channel] = bulkStrings(buf, at, 2);
    if ((kind !== 'message' && kind !== 'smessage') || !channel || !armed.channel.test(channel)) {
      return false;
    }
    this.armed = undefined;
    armed.onDrop(channel);
    return true;
  }
}

const ARRAY = 0x2a; // *
const PUSH = 0x3e; // >
const BULK = 0x24; // $
const CR = 0x0d;
/** RESP types whose header gives their length in bytes: bulk string, verbatim, blob error. */
const SIZED = new Set([BULK, 0x3d, 0x21]);
/** RESP types whose header gives a number of values: array, set, push; map and attribute (pairs). */
const AGGREGATE = new Map([
  [ARRAY, 1],
  [0x7e, 1],
  [PUSH, 1],
  [0x25, 2],
  [0x7c, 2],
]);

function lineEnd(buf: Buffer, at: number): number {
  const cr = buf.indexOf(CR, at);
  return cr < 0 || cr + 1 >= buf.length ? -1 : cr;
}

/**
 * The offset after the RESP value starting at `at`, or -1 when it has not all arrived. (An
 * attribute counts as a value of its own: it is passed on with the one it precedes.)
 */
function valueEnd(buf: Buffer, at: number): number {
  if (at >= buf.length) return -1;
  const cr = lineEnd(buf, at + 1);
  if (cr < 0) return -1;
  const type = buf[at]!;
  const next = cr + 2;
  const n = Number(buf.toString('latin1', at + 1, cr));
  if (SIZED.has(type)) {
    if (n < 0) return next;
    return next + n + 2 <= buf.length ? next + n + 2 : -1;
  }
  const per = AGGREGATE.get(type);
  if (per === undefined || n < 0) return next;
  let end = next;
  for (let i = 0; i < per * n; i++) {
    end = valueEnd(buf, end);
    if (end < 0) return -1;
  }
  return end;
}

/** The first `count` elements of the (complete) array at `at`, when they are bulk strings. */
function bulkStrings(buf: Buffer, at: number, count: number): (string | undefined)[] {
  const strings: (string | undefined)[] = [];
  let pos = lineEnd(buf, at + 1) + 2;
  for (let i = 0; i < count; i++) {
    if (buf[pos] !== BULK) return strings;
    const cr = lineEnd(buf, pos + 1);
    const n = Number(buf.toString('latin1', pos + 1, cr));
    strings.push(buf.toString('utf8', cr + 2, cr + 2 + n));
    pos = cr + 2 + n + 2;
  }
  return strings;
}

import net from 'node:net';
import tls from 'node:tls';
import type { Redis } from 'ioredis';
import type { ClaimedIngestEntry } from './ingest-stream.js';
import {
  CR,
  FRAMING_BOUND,
  bulkStringBound,
  writeArrayHeader,
  writeBulkString,
} from './resp-writer.js';

/**
 * A connection of its own that does nothing but `XREADGROUP` on an ingest partition, its reply
 * decoded straight from the socket's bytes. ioredis decodes an entry's seven strings through
 * its generic RESP decoder (≈ 2.5–3.5 µs an entry), and packing the reply in Lua instead
 * (readIngest-1.lua) costs Redis ≈ 1.4 µs an entry to turn the reply into Lua tables, on the
 * one thread every write shares, where the stream is Redis-bound. Standalone Redis only (a
 * Cluster keeps the packed read); the address, credentials, database and TLS are the client's.
 *
 * One read at a time. A read that fails (the socket closed, an error reply, no answer within
 * its time) rejects with an error whose message says so the way ioredis would ("Connection is
 * closed.", "Command timed out", the server's error text, e.g. NOGROUP), and the next read
 * opens a new connection.
 */
export class IngestReadConnection {
  private socket: net.Socket | undefined;
  private ready: Promise<void> | undefined;
  private pending: PendingReply | undefined;
  private chunks: Buffer[] = [];
  private closed = false;
  private reading = false;

  /** Only for a standalone ioredis client (not a Cluster), whose options give the address. */
  constructor(private readonly client: Redis) {}

  /**
   * `XREADGROUP GROUP <group> <consumer> COUNT <count> [BLOCK <blockMs>] STREAMS <key> >`: the
   * new entries, [] when none came. Rejects when `timeoutMs` passes without an answer, a
   * connection made for it included (and drops the connection, which may have fallen silent).
   */
  async read(
    key: string,
    group: string,
    consumer: string,
    count: number,
    blockMs: number | undefined,
    timeoutMs: number,
  ): Promise<ClaimedIngestEntry[]> {
    if (this.closed) throw new Error('Connection is closed.');
    if (this.reading) throw new Error('one XREADGROUP at a time on an ingest read connection');
    this.reading = true;
    try {
      const args = ['XREADGROUP', 'GROUP', group, consumer, 'COUNT', String(count)];
      if (blockMs !== undefined) args.push('BLOCK', String(blockMs));
      args.push('STREAMS', key, '>');
      const deadline = Date.now() + timeoutMs;
      await this.connect(deadline);
      const reply = await this.request(encodeCommand(args), deadline, new ReadReplyDecoder());
      return reply ?? [];
    } finally {
      this.reading = false;
    }
  }

  /** Closes the connection; a read in flight rejects. Later reads reject too. */
  close(): void {
    this.closed = true;
    this.drop(new Error('Connection is closed.'));
  }

  private connect(deadline: number): Promise<void> {
    this.ready ??= this.open(deadline).catch((err: unknown) => {
      this.drop(err instanceof Error ? err : new Error(String(err)));
      throw err;
    });
    return this.ready;
  }

  /** Connects and runs AUTH, SELECT and CLIENT SETNAME, by the deadline or connectTimeout. */
  private async open(readDeadline: number): Promise<void> {
    const { host = 'localhost', port = 6379, path, username, password, db } = this.client.options;
    const tlsOptions = this.client.options.tls;
    const socket = tlsOptions
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ...tlsOptions })
      : path
        ? net.connect({ path })
        : net.connect({ host, port });
    this.socket = socket;
    socket.setNoDelay(true);
    // A socket given up (dropped) may still report its end: it must not fail its successor.
    socket.on('data', (chunk: Buffer) => {
      if (this.socket === socket) this.receive(chunk);
    });
    socket.on('error', (err) => {
      if (this.socket === socket) this.drop(new Error(`Connection is closed. (${err.message})`));
    });
    socket.on('close', () => {
      if (this.socket === socket) this.drop(new Error('Connection is closed.'));
    });
    const deadline = Math.min(
      readDeadline,
      Date.now() + (this.client.options.connectTimeout ?? 10_000),
    );
    await new Promise<void>((resolve, reject) => {
      const failed = (err?: Error) => {
        clearTimeout(timer);
        reject(new Error(`Connection is closed. (${err?.message ?? 'closed while connecting'})`));
      };
      const timer = setTimeout(() => {
        failed(new Error('connect timed out'));
        socket.destroy();
      }, deadline - Date.now());
      timer.unref();
      socket.once('error', failed);
      socket.once('close', () => failed());
      socket.once(tlsOptions ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.off('error', failed);
        resolve();
      });
    });
    if (password) {
      const auth = username ? ['AUTH', username, password] : ['AUTH', password];
      await this.request(encodeCommand(auth), deadline, STATUS);
    }
    if (db) await this.request(encodeCommand(['SELECT', String(db)]), deadline, STATUS);
    // Named in CLIENT LIST after the client it reads for, e.g. bubble-gateway:ingest-read; an
    // ACL user without CLIENT (a refusal) still reads. A connection lost here fails the read.
    const name = `${this.client.options.connectionName ?? 'bubble'}:ingest-read`;
    await this.request(encodeCommand(['CLIENT', 'SETNAME', name]), deadline, STATUS).catch(
      (err: unknown) => {
        if (!this.socket) throw err;
      },
    );
  }

  private request<T>(bytes: Buffer, deadline: number, decoder: ReplyDecoder<T>): Promise<T> {
    const socket = this.socket;
    if (!socket || socket.destroyed) return Promise.reject(new Error('Connection is closed.'));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          // A connection that does not answer in time may never: start over on the next read.
          this.drop(new Error('Command timed out'));
        },
        Math.max(0, deadline - Date.now()),
      );
      timer.unref();
      this.pending = {
        decoder,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value as T);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      socket.write(bytes);
    });
  }

  private receive(chunk: Buffer): void {
    const pending = this.pending;
    if (!pending) {
      // Nothing was asked: a server that talks out of turn is not to be trusted.
      this.drop(new Error('Connection is closed. (an unexpected reply)'));
      return;
    }
    this.chunks.push(chunk);
    const data = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks);
    let decoded: Decoded<unknown>;
    try {
      decoded = pending.decoder.decode(data);
    } catch (err) {
      this.drop(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (decoded === INCOMPLETE) {
      // Only what is not decoded yet is kept (a copy: not the whole reply's buffer), so a large
      // reply costs its bytes once, not once per socket read.
      const consumed = pending.decoder.consumed?.() ?? 0;
      this.chunks = [consumed > 0 ? Buffer.from(data.subarray(consumed)) : data];
      return;
    }
    this.chunks = [];
    this.pending = undefined;
    if (decoded.end !== data.length) {
      this.drop(new Error('Connection is closed. (an unexpected reply)'));
      pending.reject(new Error('Connection is closed. (an unexpected reply)'));
      return;
    }
    if (decoded.error === undefined) {
      pending.resolve(decoded.value);
      return;
    }
    // A replica answers a read (a write to the group) with READONLY: the master it was behind
    // stepped down. The next read reconnects to whatever serves the address now, as ioredis
    // does on READONLY (connect.ts).
    if (decoded.error.startsWith('READONLY')) this.drop(new Error(decoded.error));
    pending.reject(new Error(decoded.error));
  }

  /** Fails what is in flight and forgets the socket; the next read connects again. */
  private drop(reason: Error): void {
    const pending = this.pending;
    this.pending = undefined;
    this.chunks = [];
    this.ready = undefined;
    const socket = this.socket;
    this.socket = undefined;
    socket?.removeAllListeners('data');
    socket?.destroy();
    pending?.reject(reason);
  }
}

/**
 * Decodes a reply from the bytes received so far (from the reply's start, or from where
 * consumed() said the bytes before were done with).
 */
interface ReplyDecoder<T> {
  decode(data: Buffer): Decoded<T>;
  /** After an incomplete decode: how many leading bytes are decoded and may be let go. */
  consumed?(): number;
}

interface PendingReply {
  decoder: ReplyDecoder<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

const INCOMPLETE = Symbol('incomplete');

/** A whole reply: its value or its error text, and where it ends. */
type Decoded<T> = typeof INCOMPLETE | { value: T; error?: undefined; end: number } | ErrorReply;

interface ErrorReply {
  value?: undefined;
  error: string;
  end: number;
}

const STAR = 0x2a;
const DOLLAR = 0x24;
const MINUS = 0x2d;
const PLUS = 0x2b;

/** A RESP2 request: an array of bulk strings, written by resp-writer. */
function encodeCommand(args: readonly string[]): Buffer {
  let bound = FRAMING_BOUND;
  for (const arg of args) bound += bulkStringBound(arg);
  const target = Buffer.allocUnsafe(bound);
  let pos = writeArrayHeader(target, 0, args.length);
  for (const arg of args) pos = writeBulkString(target, pos, arg);
  return target.subarray(0, pos);
}

const STATUS: ReplyDecoder<string> = { decode: decodeStatus };

/** +OK, or an error reply. */
function decodeStatus(data: Buffer): Decoded<string> {
  const lineEnd = data.indexOf(CR, 1);
  if (lineEnd < 0 || lineEnd + 1 >= data.length) return INCOMPLETE;
  const text = data.toString('utf8', 1, lineEnd);
  if (data[0] === MINUS) return { error: text, end: lineEnd + 2 };
  if (data[0] !== PLUS) throw new Error(`Connection is closed. (unexpected reply ${data[0]})`);
  return { value: text, end: lineEnd + 2 };
}

/**
 * The reply of an XREADGROUP of one stream: null (nothing new within the block), or
 * [[key, [[id, [field, value, …] | null], …]]], as entries with one delivery (new ones). A
 * reply of 1,000 entries spans several socket reads: each call goes on from the last whole
 * entry of the call before, given the same bytes plus what came since.
 */
export class ReadReplyDecoder implements ReplyDecoder<ClaimedIngestEntry[] | null> {
  private entries: ClaimedIngestEntry[] | undefined;
  private count = 0;
  /** Where the next entry starts, once the header is read. */
  private resumeAt = 0;

  /** The bytes before the next entry, which the next call is given no more. */
  consumed(): number {
    const done = this.resumeAt;
    this.resumeAt = 0;
    return done;
  }

  decode(data: Buffer): Decoded<ClaimedIngestEntry[] | null> {
    const reader = new ReplyReader(data);
    try {
      if (this.entries === undefined) {
        const type = data[0];
        if (type === undefined) return INCOMPLETE;
        if (type === MINUS) {
          const lineEnd = data.indexOf(CR, 1);
          if (lineEnd < 0 || lineEnd + 1 >= data.length) return INCOMPLETE;
          return { error: data.toString('utf8', 1, lineEnd), end: lineEnd + 2 };
        }
        const streams = reader.arrayLength();
        if (streams < 0) return { value: null, end: reader.pos };
        if (streams !== 1) {
          throw new Error(`Connection is closed. (XREADGROUP of ${streams} streams)`);
        }
        if (reader.arrayLength() !== 2)
          throw new Error('Connection is closed. (a malformed reply)');
        reader.skipBulk();
        this.count = reader.arrayLength();
        this.entries = [];
        this.resumeAt = reader.pos;
      }
      reader.pos = this.resumeAt;
      const entries = this.entries;
      while (entries.length < this.count) {
        if (reader.arrayLength() !== 2)
          throw new Error('Connection is closed. (a malformed entry)');
        const id = reader.id();
        const n = reader.arrayLength();
        // An entry deleted while pending comes back without fields.
        const fields: string[] = n < 0 ? [] : new Array<string>(n);
        for (let f = 0; f < n; f++) fields[f] = reader.field();
        entries.push({ id, fields, deliveries: 1 });
        this.resumeAt = reader.pos;
      }
      return { value: entries, end: reader.pos };
    } catch (err) {
      if (err === NEED_MORE) return INCOMPLETE;
      throw err;
    }
  }
}

const NEED_MORE = Symbol('need more');

/** Node's own slicers, without Buffer#toString's checks of its arguments. */
interface Slicing {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
}

class ReplyReader {
  pos = 0;

  constructor(private readonly data: Buffer) {}

  /** The integer after a type byte at `pos`, up to CRLF; moves past the line. */
  line(from: number): number {
    const data = this.data;
    let at = this.pos + from;
    let negative = false;
    if (data[at] === MINUS) {
      negative = true;
      at++;
    }
    let value = 0;
    for (;;) {
      const byte = data[at];
      if (byte === undefined) throw NEED_MORE;
      if (byte === CR) break;
      value = value * 10 + (byte - 0x30);
      at++;
    }
    if (at + 1 >= data.length) throw NEED_MORE;
    this.pos = at + 2;
    return negative ? -value : value;
  }

  arrayLength(): number {
    const type = this.data[this.pos];
    if (type === undefined) throw NEED_MORE;
    if (type !== STAR) throw new Error('Connection is closed. (an array was expected)');
    return this.line(1);
  }

  skipBulk(): void {
    this.bulkStart();
  }

  /** An entry id: ASCII digits and a dash. */
  id(): string {
    const start = this.bulkStart();
    if (start < 0) throw new Error('Connection is closed. (an entry without an id)');
    return (this.data as unknown as Slicing).latin1Slice(start, this.pos - 2);
  }

  /**
   * A field name or value. What every post entry has ("v", "1", "op", "post", "body") is a
   * shared string instead of one decoded each time.
   */
  field(): string {
    const start = this.bulkStart();
    if (start < 0) return '';
    const end = this.pos - 2;
    const data = this.data;
    switch (end - start) {
      case 1:
        if (data[start] === 0x76) return 'v';
        if (data[start] === 0x31) return '1';
        break;
      case 2:
        if (data[start] === 0x6f && data[start + 1] === 0x70) return 'op';
        break;
      case 4:
        if (data[start + 1] === 0x6f) {
          const first = data[start];
          if (first === 0x70 && data[start + 2] === 0x73 && data[start + 3] === 0x74) return 'post';
          if (first === 0x62 && data[start + 2] === 0x64 && data[start + 3] === 0x79) return 'body';
        }
        break;
    }
    return (data as unknown as Slicing).utf8Slice(start, end);
  }

  /** Moves past the next bulk string; where its bytes start, or -1 for a null one. */
  private bulkStart(): number {
    const type = this.data[this.pos];
    if (type === undefined) throw NEED_MORE;
    if (type !== DOLLAR) throw new Error('Connection is closed. (a bulk string was expected)');
    const length = this.line(1);
    if (length < 0) return -1;
    const start = this.pos;
    if (start + length + 2 > this.data.length) throw NEED_MORE;
    this.pos = start + length + 2;
    return start;
  }
}

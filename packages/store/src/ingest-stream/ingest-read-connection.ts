import net from 'node:net';
import tls from 'node:tls';
import type { Redis } from 'ioredis';
import {
  FRAMING_BOUND,
  bulkStringBound,
  writeArrayHeader,
  writeBulkString,
} from '../redis/resp-writer.js';
import type { ClaimedIngestEntry } from './ingest-stream.js';
import { ReadReplyDecoder } from './read-reply-decoder.js';
import { INCOMPLETE, STATUS, type Decoded, type ReplyDecoder } from './resp-reply.js';

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

interface PendingReply {
  decoder: ReplyDecoder<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** A RESP2 request: an array of bulk strings, written by resp-writer. */
function encodeCommand(args: readonly string[]): Buffer {
  let bound = FRAMING_BOUND;
  for (const arg of args) bound += bulkStringBound(arg);
  const target = Buffer.allocUnsafe(bound);
  let pos = writeArrayHeader(target, 0, args.length);
  for (const arg of args) pos = writeBulkString(target, pos, arg);
  return target.subarray(0, pos);
}

import net from 'node:net';

/** One parsed HTTP/1.1 response; `head` and `body` are views into the received bytes. */
export interface RawResponse {
  status: number;
  head: Buffer;
  body: Buffer;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * A keep-alive HTTP/1.1 connection that may carry many requests at once (pipelining), with a
 * minimal response parser: status line, Content-Length bodies (bubble sends no chunked
 * answers), 204 and 304 without a body. Far cheaper per request than node:http's client, so a
 * driver process can outrun the gateway it measures. Callbacks run in request order.
 */
export class RawHttpConnection {
  private pending: Buffer | null = null;
  private readonly waiting: Array<(response: RawResponse) => void> = [];
  private failed: Error | null = null;
  onFailure: (err: Error) => void = () => {};

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    const fail = (err: Error) => {
      if (this.failed) return;
      this.failed = err;
      this.onFailure(err);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  static connect(host: string, port: number, localAddress?: string): Promise<RawHttpConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port, ...(localAddress && { localAddress }) });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawHttpConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Requests sent whose response has not arrived. */
  get inFlight(): number {
    return this.waiting.length;
  }

  get error(): Error | null {
    return this.failed;
  }

  /** Sends one complete request (head and body); `done` gets its response. */
  send(request: Buffer | string, done: (response: RawResponse) => void): void {
    if (this.failed) throw this.failed;
    this.waiting.push(done);
    this.socket.write(request);
  }

  /** The same, as a promise. */
  request(request: Buffer | string): Promise<RawResponse> {
    return new Promise((resolve) => this.send(request, resolve));
  }

  /** Holds writes until `uncork` so requests sent together leave in one segment. */
  cork(): void {
    this.socket.cork();
  }

  uncork(): void {
    this.socket.uncork();
  }

  close(): void {
    this.failed ??= new Error('closed');
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    const data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    let pos = 0;
    // Requests a callback sends go out together once this chunk is handled.
    this.socket.cork();
    try {
      for (;;) {
        const headEnd = data.indexOf(HEAD_END, pos);
        if (headEnd < 0) break;
        const status =
          (data[pos + 9]! - 48) * 100 + (data[pos + 10]! - 48) * 10 + data[pos + 11]! - 48;
        let length = 0;
        if (status !== 204 && status !== 304 && status >= 200) {
          length = contentLength(data, pos, headEnd);
          if (length < 0) {
            this.close();
            this.onFailure(new Error('a response without Content-Length'));
            return;
          }
        }
        const end = headEnd + 4 + length;
        if (end > data.length) break;
        const start = pos;
        pos = end;
        this.waiting.shift()?.({
          status,
          head: data.subarray(start, headEnd),
          body: data.subarray(headEnd + 4, end),
        });
      }
    } finally {
      this.socket.uncork();
    }
    this.pending = pos < data.length ? Buffer.from(data.subarray(pos)) : null;
  }
}

/** The Content-Length of a response head, or -1. Header names are matched case-insensitively. */
function contentLength(data: Buffer, start: number, end: number): number {
  const head = data.toString('latin1', start, end).toLowerCase();
  const at = head.indexOf('\r\ncontent-length:');
  if (at < 0) return -1;
  const value = Number.parseInt(head.slice(at + 17).trimStart(), 10);
  return Number.isNaN(value) ? -1 : value;
}

/** A header's value in a response head (case-insensitive name), or undefined. */
export function headerValue(head: Buffer, name: string): string | undefined {
  const text = head.toString('latin1');
  const at = text.toLowerCase().indexOf(`\r\n${name.toLowerCase()}:`);
  if (at < 0) return undefined;
  const from = at + name.length + 3;
  const to = text.indexOf('\r\n', from);
  return text.slice(from, to < 0 ? undefined : to).trim();
}

/** A complete HTTP/1.1 request as bytes. */
export function httpRequest(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Buffer {
  let head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  if (body !== undefined) {
    head += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
  }
  return Buffer.from(`${head}\r\n${body ?? ''}`);
}

import net from 'node:net';

/** `XADD <key> * v 1 op post body` in RESP, up to the body's bulk string (an ASCII body follows). */
export function xaddPostHead(key: string): string {
  return (
    `*9\r\n$4\r\nXADD\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n$1\r\n*\r\n` +
    `$1\r\nv\r\n$1\r\n1\r\n$2\r\nop\r\n$4\r\npost\r\n$4\r\nbody\r\n`
  );
}

/**
 * A raw RESP connection for the producer: a pipeline of XADDs is one string written at once and
 * its answers are read as bulk strings, a few times cheaper per entry than a client library's
 * command objects, so the producer does not share the cores with the gateway more than needed.
 */
export class RespConnection {
  private buffered: Buffer | null = null;
  private readonly batches: {
    left: number;
    done: (lastId: string) => void;
    fail: (err: Error) => void;
  }[] = [];

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', (err) => this.failAll(err));
    socket.on('close', () => this.failAll(new Error('redis connection closed')));
  }

  static connect(url: string): Promise<RespConnection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: hostname, port: Number(port) });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RespConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  /**
   * Writes `count` XADDs encoded in `commands`; resolves with the id the last was given (only
   * that one is decoded: the others are counted).
   */
  send(commands: string, count: number): Promise<string> {
    return new Promise((done, fail) => {
      this.batches.push({ left: count, done, fail });
      this.socket.write(commands);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private failAll(err: Error): void {
    for (const batch of this.batches.splice(0)) batch.fail(err);
  }

  private receive(chunk: Buffer): void {
    const data = this.buffered ? Buffer.concat([this.buffered, chunk]) : chunk;
    let pos = 0;
    while (pos < data.length) {
      const type = data[pos];
      if (type === 0x2d /* - */) {
        const lineEnd = data.indexOf('\r\n', pos);
        if (lineEnd < 0) break;
        this.failAll(new Error(`XADD refused: ${data.toString('utf8', pos + 1, lineEnd)}`));
        this.socket.destroy();
        return;
      }
      // "$<length>\r\n<id>\r\n": the length read digit by digit.
      let at = pos + 1;
      let length = 0;
      while (at < data.length && data[at] !== 0x0d) length = length * 10 + data[at++]! - 0x30;
      const next = at + 2 + length + 2;
      if (at >= data.length || next > data.length) break;
      pos = next;
      const batch = this.batches[0];
      if (!batch) continue;
      if (--batch.left === 0) {
        this.batches.shift();
        batch.done(data.toString('latin1', at + 2, at + 2 + length));
      }
    }
    this.buffered = pos < data.length ? Buffer.from(data.subarray(pos)) : null;
  }
}

/** A TCP proxy that holds a chosen Redis command in flight, for the crash tests. */
import net from 'node:net';
import { InFlightHold, listenLocally } from './redis-proxy-parts.js';

/**
 * A TCP proxy in front of the main Redis for one process. Armed, it holds the first chunk a
 * client sends that matches `pattern` (and everything after it on that connection) until
 * release(): a command delayed in flight, as by a long GC pause or a slow network, at the one
 * moment that matters.
 */
export class HoldingProxy {
  private readonly sockets = new Set<net.Socket>();
  /** Held chunks, owned by the upstream connection they are for. */
  private readonly hold = new InFlightHold<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    readonly url: string,
  ) {}

  static async start(upstreamPort: number): Promise<HoldingProxy> {
    const { server, port, url } = await listenLocally();
    const proxy = new HoldingProxy(server, port, url);
    server.on('connection', (client: net.Socket) => proxy.connect(client, upstreamPort));
    return proxy;
  }

  /** Resolves with the match once a client chunk matching `pattern` is being held. */
  arm(pattern: RegExp): Promise<RegExpExecArray> {
    return this.hold.arm(pattern);
  }

  /** Forwards what was held, in order, and stops holding. */
  release(): void {
    const released = this.hold.release();
    for (const chunk of released?.chunks ?? []) released!.owner.write(chunk);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private connect(client: net.Socket, upstreamPort: number): void {
    const upstream = net.connect({ host: '127.0.0.1', port: upstreamPort });
    this.sockets.add(client);
    this.sockets.add(upstream);
    client.on('data', (chunk: Buffer) => {
      if (!this.hold.takes(upstream, chunk)) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  }
}

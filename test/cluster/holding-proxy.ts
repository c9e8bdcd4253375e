/** A TCP proxy that holds a chosen Redis command in flight, for the crash tests. */
import net from 'node:net';

/**
 * A TCP proxy in front of the main Redis for one process. Armed, it holds the first chunk a
 * client sends that matches `pattern` (and everything after it on that connection) until
 * release(): a command delayed in flight, as by a long GC pause or a slow network, at the one
 * moment that matters.
 */
export class HoldingProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private armed: { pattern: RegExp; onHold: (match: RegExpExecArray) => void } | undefined;
  private held: Array<() => void> = [];
  /** The connection whose data is being held. */
  private holding: net.Socket | undefined;

  private constructor(
    server: net.Server,
    readonly port: number,
  ) {
    this.server = server;
  }

  static async start(upstreamPort: number): Promise<HoldingProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new HoldingProxy(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (client: net.Socket) => proxy.connect(client, upstreamPort));
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Resolves with the match once a client chunk matching `pattern` is being held. */
  arm(pattern: RegExp): Promise<RegExpExecArray> {
    return new Promise((resolve) => {
      this.armed = { pattern, onHold: resolve };
    });
  }

  /** Forwards what was held, in order, and stops holding. */
  release(): void {
    this.holding = undefined;
    const held = this.held;
    this.held = [];
    for (const send of held) send();
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
      const send = () => upstream.write(chunk);
      if (this.holding === client) {
        this.held.push(send);
        return;
      }
      const match = this.armed?.pattern.exec(chunk.toString('latin1'));
      if (match && this.armed && !this.holding) {
        const { onHold } = this.armed;
        this.armed = undefined;
        this.holding = client;
        this.held.push(send);
        onHold(match);
        return;
      }
      send();
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

/** What the test proxies in front of a Redis share: their local listener and a held command. */
import net from 'node:net';

/** A server listening on a free local port, and the redis:// URL that reaches it. */
export interface LocalListener {
  server: net.Server;
  port: number;
  url: string;
}

export async function listenLocally(): Promise<LocalListener> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { server, port, url: `redis://127.0.0.1:${port}` };
}

/**
 * A local address in front of the Redis at `upstreamPort`: each client gets its own upstream
 * connection, the two closing together; a subclass says what passes between them.
 */
export abstract class LocalRedisProxy {
  readonly port: number;
  readonly url: string;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    local: LocalListener,
    protected upstreamPort: number,
  ) {
    ({ server: this.server, port: this.port, url: this.url } = local);
  }

  static async start<P extends LocalRedisProxy>(
    this: new (local: LocalListener, upstreamPort: number) => P,
    upstreamPort: number,
  ): Promise<P> {
    const proxy = new this(await listenLocally(), upstreamPort);
    proxy.server.on('connection', (client: net.Socket) => proxy.connect(client));
    return proxy;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Opens `client`'s upstream connection; either closing (or failing) ends both, then `onEnd`. */
  protected linkUpstream(client: net.Socket, onEnd?: () => void): net.Socket {
    const upstream = net.connect({ host: '127.0.0.1', port: this.upstreamPort });
    this.sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      onEnd?.();
    };
    for (const socket of [client, upstream]) {
      socket.on('close', end);
      socket.on('error', end);
    }
    return upstream;
  }

  /** Wires a newly accepted client to its upstream. */
  protected abstract connect(client: net.Socket): void;
}

/**
 * A command held in flight: armed, the first client chunk matching the pattern is held, with all
 * that follows from the same connection (its `owner`), until release().
 */
export class InFlightHold<Owner> {
  private armed: { pattern: RegExp; onHold: (match: RegExpExecArray) => void } | undefined;
  private owner: Owner | undefined;
  private held: Buffer[] = [];

  /** The connection whose data is being held. */
  get holder(): Owner | undefined {
    return this.owner;
  }

  /** Resolves with the match once a client chunk matching `pattern` is being held. */
  arm(pattern: RegExp): Promise<RegExpExecArray> {
    return new Promise((resolve) => {
      this.armed = { pattern, onHold: resolve };
    });
  }

  /** Whether `chunk`, sent by `owner`'s client, is held rather than to be forwarded now. */
  takes(owner: Owner, chunk: Buffer): boolean {
    if (this.owner === owner) {
      this.held.push(chunk);
      return true;
    }
    const match = this.armed?.pattern.exec(chunk.toString('latin1'));
    if (match && this.armed && this.owner === undefined) {
      const { onHold } = this.armed;
      this.armed = undefined;
      this.owner = owner;
      this.held.push(chunk);
      onHold(match);
      return true;
    }
    return false;
  }

  /** Stops holding: the connection that was held and its chunks in order, if one was. */
  release(): { owner: Owner; chunks: Buffer[] } | undefined {
    const owner = this.owner;
    const chunks = this.held;
    this.owner = undefined;
    this.held = [];
    return owner === undefined ? undefined : { owner, chunks };
  }
}

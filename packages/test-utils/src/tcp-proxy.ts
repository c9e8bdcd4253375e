/**
 * A real TCP proxy on 127.0.0.1 in front of one target (a redis-server), for fault tests: it
 * forwards both ways until told to cut a connection at one chosen moment, and then refuses new
 * connections until heal(), so the client's reconnects fail as they would against a store that
 * is gone.
 *
 *   proxy.cutAfterReply(/:\{a:bob\}:posts/)   the command ran, its reply never arrives
 *   proxy.cutOnSend(/:\{g\}:posts/)           the command never reaches the target
 *   proxy.silence()                          connections stay open, nothing passes (a black hole)
 */
import net from 'node:net';

/** What a cut waits for: a client chunk matching `pattern`, then the moment it cuts. */
interface Trigger {
  pattern: RegExp;
  when: 'on-send' | 'after-reply';
  onCut: () => void;
}

export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private readonly clients = new Set<net.Socket>();
  private trigger: Trigger | undefined;
  private refusing = false;
  /** New connections are silenced as they come (silence() until heal()). */
  private silencing = false;
  /** Connections that pass nothing any more, for as long as they live. */
  private readonly silenced = new WeakSet<net.Socket>();
  private cuts = 0;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host?: string; port: number }): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as net.AddressInfo;
    const proxy = new TcpProxy(server, port, {
      host: target.host ?? '127.0.0.1',
      port: target.port,
    });
    server.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  get host(): '127.0.0.1' {
    return '127.0.0.1';
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Connections cut so far (by a trigger or cutAll). */
  get cutCount(): number {
    return this.cuts;
  }

  /** Client connections open now. */
  get openConnections(): number {
    return this.clients.size;
  }

  /**
   * Once a client sends a chunk matching `pattern`, forwards it, drops the first chunk the
   * target sends back on that connection (the command ran; its reply is lost) and cuts the
   * connection; refuses new ones until heal(). Resolves when it cut.
   */
  cutAfterReply(pattern: RegExp): Promise<void> {
    return this.arm(pattern, 'after-reply');
  }

  /**
   * Once a client sends a chunk matching `pattern`, drops it unsent and cuts the connection;
   * refuses new ones until heal(). Resolves when it cut.
   */
  cutOnSend(pattern: RegExp): Promise<void> {
    return this.arm(pattern, 'on-send');
  }

  /** Cuts every open connection now and refuses new ones until heal(). */
  cutAll(): void {
    this.refusing = true;
    this.cuts++;
    for (const socket of this.sockets) socket.destroy();
  }

  /**
   * Every open connection stays open but passes nothing any more, either way, for as long as
   * it lives; new connections are accepted and are as silent, until heal(). Clients see no
   * error: their commands and replies vanish (a peer behind a dead link or a full firewall).
   */
  silence(): void {
    this.silencing = true;
    for (const client of this.clients) this.silenced.add(client);
  }

  /**
   * Accepts and forwards new connections again (an armed trigger stays armed); connections
   * silenced before stay silent.
   */
  heal(): void {
    this.refusing = false;
    this.silencing = false;
  }

  /** Disarms the trigger without cutting. */
  disarm(): void {
    this.trigger = undefined;
  }

  async close(): Promise<void> {
    this.trigger = undefined;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private arm(pattern: RegExp, when: Trigger['when']): Promise<void> {
    if (this.trigger) throw new Error('the proxy is armed already');
    return new Promise((resolve) => {
      this.trigger = { pattern, when, onCut: resolve };
    });
  }

  private accept(client: net.Socket): void {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.target);
    this.sockets.add(client);
    this.sockets.add(upstream);
    this.clients.add(client);
    if (this.silencing) this.silenced.add(client);
    // A reply dropped on this connection is the one after the matching chunk.
    let dropNextReply: (() => void) | undefined;
    const cut = (onCut: () => void) => {
      this.refusing = true;
      this.cuts++;
      client.destroy();
      upstream.destroy();
      onCut();
    };
    client.on('data', (chunk: Buffer) => {
      if (this.silenced.has(client)) return;
      const trigger = this.trigger;
      if (trigger && trigger.pattern.test(chunk.toString('latin1'))) {
        this.trigger = undefined;
        if (trigger.when === 'on-send') {
          cut(trigger.onCut);
          return;
        }
        dropNextReply = () => cut(trigger.onCut);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.silenced.has(client)) return;
      if (dropNextReply) {
        dropNextReply();
        return;
      }
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      this.clients.delete(client);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  }
}

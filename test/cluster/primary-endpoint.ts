/**
 * One master and its replica behind one address, as a managed Redis's primary endpoint, for
 * failover-store.test.ts: FAILOVER swaps their roles and the address moves.
 */
import net from 'node:net';
import { waitFor, type RedisServerHandle } from '@bubble/test-utils';
import { Redis } from 'ioredis';

/**
 * One address in front of whichever server is master now, as a managed Redis's primary
 * endpoint: moving it sends new connections to another server; those open stay where they are.
 */
export class PrimaryEndpoint {
  private readonly sockets = new Set<net.Socket>();
  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private target: number,
  ) {}

  static async start(target: number): Promise<PrimaryEndpoint> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const endpoint = new PrimaryEndpoint(
      server,
      (server.address() as net.AddressInfo).port,
      target,
    );
    server.on('connection', (client) => endpoint.forward(client));
    return endpoint;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  moveTo(port: number): void {
    this.target = port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(client: net.Socket): void {
    const upstream = net.connect({ host: '127.0.0.1', port: this.target });
    for (const socket of [client, upstream]) this.sockets.add(socket);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('close', end);
      socket.on('error', end);
    }
  }
}

export async function adminCall(server: RedisServerHandle, ...args: Array<string | number>) {
  const client = new Redis(server.port, { maxRetriesPerRequest: 1 });
  try {
    return await client.call(String(args[0]), ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

/** Waits until `replica` is linked to its master and has what the master had sent by now. */
export async function caughtUp(
  replica: RedisServerHandle,
  master: RedisServerHandle,
): Promise<void> {
  const offset = (info: unknown, field: string) =>
    Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(String(info))?.[1] ?? -1);
  const sent = offset(await adminCall(master, 'INFO', 'replication'), 'master_repl_offset');
  await waitFor(
    async () => {
      const info = await adminCall(replica, 'INFO', 'replication');
      return (
        /master_link_status:up/.test(String(info)) && offset(info, 'slave_repl_offset') >= sent
      );
    },
    { timeoutMs: 15_000, message: `replica ${replica.port} never caught up` },
  );
}

/**
 * One master and its replica behind one address, as a managed Redis's primary endpoint, for
 * failover-store.test.ts: FAILOVER swaps their roles and the address moves.
 */
import net from 'node:net';
import { waitFor, type RedisServerHandle } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { LocalRedisProxy } from './redis-proxy-parts.js';

/**
 * One address in front of whichever server is master now, as a managed Redis's primary
 * endpoint: moving it sends new connections to another server; those open stay where they are.
 */
export class PrimaryEndpoint extends LocalRedisProxy {
  moveTo(port: number): void {
    this.upstreamPort = port;
  }

  protected connect(client: net.Socket): void {
    const upstream = this.linkUpstream(client);
    client.pipe(upstream);
    upstream.pipe(client);
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

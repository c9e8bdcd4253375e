import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The HTTP server of a bench's push service (webhook-receiver.ts, sync-receiver.ts): on a free
 * loopback port, connections kept alive as a real push service keeps them.
 */
export class PushServer {
  private server: http.Server | undefined;

  constructor(private readonly handle: http.RequestListener) {}

  /** Listens and returns the URL to deliver to. */
  async listen(): Promise<string> {
    const server = (this.server = http.createServer(this.handle));
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/push`;
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}

/** A TCP proxy that holds a chosen Redis command in flight, for the crash tests. */
import net from 'node:net';
import { InFlightHold, LocalRedisProxy } from './redis-proxy-parts.js';

/**
 * A TCP proxy in front of the main Redis for one process. Armed, it holds the first chunk a
 * client sends that matches `pattern` (and everything after it on that connection) until
 * release(): a command delayed in flight, as by a long GC pause or a slow network, at the one
 * moment that matters.
 */
export class HoldingProxy extends LocalRedisProxy {
  /** Held chunks, owned by the upstream connection they are for. */
  private readonly hold = new InFlightHold<net.Socket>();

  /** Resolves with the match once a client chunk matching `pattern` is being held. */
  arm(pattern: RegExp): Promise<RegExpExecArray> {
    return this.hold.arm(pattern);
  }

  /** Forwards what was held, in order, and stops holding. */
  release(): void {
    const released = this.hold.release();
    for (const chunk of released?.chunks ?? []) released!.owner.write(chunk);
  }

  protected connect(client: net.Socket): void {
    const upstream = this.linkUpstream(client);
    client.on('data', (chunk: Buffer) => {
      if (!this.hold.takes(upstream, chunk)) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
  }
}

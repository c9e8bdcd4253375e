/** What the test proxies in front of a Redis share: their local listener and a held command. */
import net from 'node:net';

/** A server listening on a free local port, and the redis:// URL that reaches it. */
export async function listenLocally(): Promise<{ server: net.Server; port: number; url: string }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { server, port, url: `redis://127.0.0.1:${port}` };
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

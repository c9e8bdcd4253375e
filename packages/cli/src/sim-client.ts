import { CLOSE, TERMINAL_CLOSE_CODES } from '@bubble/protocol';
import { WebSocket } from 'ws';
import type { SimStats } from './sim-report.js';

/** How long a simulated request or WebSocket handshake may take. */
export const SIM_REQUEST_TIMEOUT_MS = 10_000;

/** One simulated app: a socket for its user, reconnecting with backoff like the SDK would. */
export class SimClient {
  private ws: WebSocket | undefined;
  private state: 'idle' | 'connecting' | 'open' | 'done' = 'idle';
  private retryAt = 0;
  private failures = 0;
  private queued = true;
  private refusedStatus: number | undefined;
  /** The feed count of the newest badge received. */
  feed = 0;

  constructor(
    readonly user: string,
    private readonly token: string,
    private readonly url: URL,
    private readonly stats: SimStats,
    private readonly sim: { fail(message: string): void; readonly stopping: boolean },
  ) {}

  isIdle(): boolean {
    return this.state === 'idle';
  }

  isOpen(): boolean {
    return this.state === 'open';
  }

  /** True once when an idle client's backoff has passed: it goes back in the connect queue. */
  wantsConnect(now: number): boolean {
    if (this.state !== 'idle' || this.queued || now < this.retryAt) return false;
    this.queued = true;
    return true;
  }

  connect(): void {
    this.queued = false;
    this.state = 'connecting';
    this.refusedStatus = undefined;
    let first = true;
    let opened = false;
    const ws = new WebSocket(this.url, {
      headers: { authorization: `Bearer ${this.token}` },
      handshakeTimeout: SIM_REQUEST_TIMEOUT_MS,
      maxPayload: 1024 * 1024,
      perMessageDeflate: false,
      followRedirects: false,
    });
    this.ws = ws;
    ws.on('unexpected-response', (_req, res) => {
      this.refusedStatus = res.statusCode;
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      opened = true;
      this.state = 'open';
      this.failures = 0;
      this.stats.connected++;
      this.stats.peakConnected = Math.max(this.stats.peakConnected, this.stats.connected);
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return this.sim.fail('a binary frame from the gateway');
      let frame: { type?: unknown; badge?: { feed?: unknown }; code?: unknown; message?: unknown };
      try {
        frame = JSON.parse(data.toString()) as typeof frame;
      } catch {
        return this.sim.fail('a frame that is not JSON');
      }
      if (frame.type === 'badge') {
        if (first) this.stats.initialBadges++;
        else this.stats.pushes++;
        first = false;
        const feed = frame.badge?.feed;
        this.feed = typeof feed === 'number' ? feed : 0;
      } else if (frame.type === 'error') {
        this.sim.fail(`WebSocket error frame: ${String(frame.code)}: ${String(frame.message)}`);
      }
    });
    ws.on('error', (err) => {
      if (this.sim.stopping || this.refusedStatus !== undefined) return;
      this.sim.fail(`WebSocket: ${err.message}`);
    });
    ws.on('close', (code) => {
      if (opened) this.stats.connected--;
      this.ws = undefined;
      if (this.sim.stopping || this.state === 'done') {
        this.state = 'done';
        return;
      }
      const refused = this.refusedStatus;
      if (refused === 429 || refused === 503) {
        this.stats.throttled++;
      } else if (refused !== undefined) {
        this.sim.fail(`WebSocket upgrade refused with HTTP ${refused}`);
        if (refused === 401 || refused === 403 || refused === 404) {
          this.state = 'done';
          return;
        }
      } else if (opened && TERMINAL_CLOSE_CODES.has(code)) {
        this.sim.fail(`WebSocket closed with ${code}`);
        this.state = 'done';
        return;
      } else if (opened && code !== CLOSE.goingAway && code !== CLOSE.overloaded) {
        this.sim.fail(`WebSocket lost (${code})`);
      }
      if (opened) this.stats.reconnects++;
      this.failures++;
      this.state = 'idle';
      this.retryAt = Date.now() + Math.min(10_000, 250 * 2 ** Math.min(this.failures, 6));
    });
  }

  /** Closes with 1000 and waits (bounded) for the close to complete. */
  async close(): Promise<void> {
    this.state = 'done';
    const ws = this.ws;
    if (!ws) return;
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    else ws.close(1000, 'simulation over');
    const timer = setTimeout(() => ws.terminate(), 2000);
    await closed;
    clearTimeout(timer);
  }
}

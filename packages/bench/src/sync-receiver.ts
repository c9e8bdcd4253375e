import http from 'node:http';
import { verifyWebhook } from '@bubble/events';
import { PushServer } from './push-server.js';

const BODY_LIMIT = 1 << 20;

interface Entry {
  user?: unknown;
  badge?: { total?: unknown };
  seq?: unknown;
  shown?: unknown;
}

/**
 * The phones of `bench sync`: a push service that checks each request's signature, applies an
 * entry only when its seq is above the user's last (counting the ones out of order), and records
 * per user the total their icon shows and when it first showed `watchedTotal` after `watch()`.
 */
export class SyncReceiver {
  private readonly server = new PushServer((request, response) => this.handle(request, response));
  private readonly accepted = new Set<string>();
  readonly icon = new Map<string, number>();
  private readonly lastSeq = new Map<string, number>();
  /** performance.now() of the delivery that set a watched user's icon to the watched total. */
  readonly correctedAt = new Map<string, number>();
  private watching = false;
  private watchedTotal = 0;
  faults = { badSignature: 0, badBody: 0, outOfOrder: 0 };
  requests = 0;
  userDeliveries = 0;
  lastAcceptedAt = 0;

  constructor(private readonly secret: string) {}

  listen(): Promise<string> {
    return this.server.listen();
  }

  close(): Promise<void> {
    return this.server.close();
  }

  /** From now on, records when each user's icon first shows `total`. */
  watch(total: number): void {
    this.watching = true;
    this.watchedTotal = total;
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) chunks.push(chunk);
    });
    request.on('end', () => {
      this.requests++;
      const answer = (status: number) => {
        response.statusCode = status;
        response.end();
      };
      const raw = Buffer.concat(chunks);
      const signature = request.headers['x-bubble-signature'];
      if (typeof signature !== 'string' || !verifyWebhook(this.secret, signature, raw)) {
        this.faults.badSignature++;
        return answer(401);
      }
      let body: { id?: unknown; deliveries?: Entry[] };
      try {
        body = JSON.parse(raw.toString('utf8')) as typeof body;
      } catch {
        this.faults.badBody++;
        return answer(400);
      }
      if (typeof body.id !== 'string' || !Array.isArray(body.deliveries)) {
        this.faults.badBody++;
        return answer(400);
      }
      if (this.accepted.has(body.id)) return answer(200);
      this.accepted.add(body.id);
      const now = performance.now();
      this.lastAcceptedAt = now;
      for (const entry of body.deliveries) this.apply(entry, now);
      answer(200);
    });
  }

  private apply(entry: Entry, now: number): void {
    const { user, seq } = entry;
    const total = entry.badge?.total;
    if (typeof user !== 'string' || typeof seq !== 'number' || typeof total !== 'number') {
      this.faults.badBody++;
      return;
    }
    this.userDeliveries++;
    if (seq <= (this.lastSeq.get(user) ?? 0)) {
      this.faults.outOfOrder++;
      return;
    }
    this.lastSeq.set(user, seq);
    this.icon.set(user, total);
    if (this.watching && total === this.watchedTotal && !this.correctedAt.has(user)) {
      this.correctedAt.set(user, now);
    }
  }
}

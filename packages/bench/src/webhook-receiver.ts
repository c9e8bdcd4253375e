import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

import { round2 } from './live-stack.js';
import { PushServer } from './push-server.js';

const SIGNATURE_TOLERANCE_S = 300;
const BODY_LIMIT = 1 << 20;

type Counts = Record<string, number>;

export interface PhaseCounters {
  requests: number;
  retriedRequests: number;
  refused: number;
  deliveries: number;
  userDeliveries: number;
  largestRequest: number;
}

const emptyCounters = (): PhaseCounters => ({
  requests: 0,
  retriedRequests: 0,
  refused: 0,
  deliveries: 0,
  userDeliveries: 0,
  largestRequest: 0,
});

/**
 * The platform's push service: verifies `X-Bubble-Signature` (HMAC-SHA256 of "<t>.<raw body>",
 * t within 5 minutes) and that `Idempotency-Key` is the body's id, answers 503 to a seeded
 * share of requests, and records per user the badge of the last delivery it accepted and the
 * shortest time between two accepted deliveries of one user.
 */
export class WebhookReceiver {
  private readonly server = new PushServer((request, response) => this.handle(request, response));
  private readonly attempts = new Map<string, number>();
  private readonly accepted = new Set<string>();
  private readonly lastBadge = new Map<string, Record<string, number>>();
  private readonly userAcceptedAt = new Map<string, number>();
  private failShare = 0;
  private phase = emptyCounters();
  private readonly total = emptyCounters();
  /** Problems a correct sender never causes. */
  readonly faults: Counts = {
    badSignature: 0,
    keyMismatch: 0,
    badBody: 0,
    duplicateAccepted: 0,
    tooManyUsers: 0,
  };
  private minGapMs = Infinity;
  private violations = 0;
  /** performance.now() of the last request, and of the last delivery accepted. */
  lastRequestAt = 0;
  lastAcceptedAt = 0;

  constructor(
    private readonly secret: string,
    private readonly minIntervalMs: number,
    private readonly random: () => number,
  ) {}

  listen(): Promise<string> {
    return this.server.listen();
  }

  close(): Promise<void> {
    return this.server.close();
  }

  startPhase(_label: string, failShare: number): void {
    this.failShare = failShare;
    this.phase = emptyCounters();
  }

  phaseStats() {
    return { ...this.phase };
  }

  totals() {
    return {
      ...this.total,
      faults: this.faults,
      minGapMs: this.minGapMs === Infinity ? null : round2(this.minGapMs),
      intervalViolations: this.violations,
      intervalViolationMs:
        this.minGapMs === Infinity ? 0 : round2(Math.max(0, this.minIntervalMs - this.minGapMs)),
      distinctIds: this.attempts.size,
    };
  }

  /**
   * Whether `user`'s phone shows the number of `expected`: the total of their last accepted
   * badge, or 0 (a change that leaves the total as it was is not delivered: docs/api.md).
   */
  shows(user: string, expected: Record<string, number>): boolean {
    return totalOf(this.lastBadge.get(user) ?? {}) === totalOf(expected);
  }

  shown(user: string): Record<string, number> | null {
    return this.lastBadge.get(user) ?? null;
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) chunks.push(chunk);
    });
    request.on('end', () => {
      const answer = (status: number) => {
        response.statusCode = status;
        response.end();
      };
      const raw = Buffer.concat(chunks);
      const count = (key: keyof PhaseCounters, n = 1) => {
        this.phase[key] += n;
        this.total[key] += n;
      };
      count('requests');
      this.lastRequestAt = performance.now();
      if (request.method !== 'POST' || size > BODY_LIMIT) {
        this.faults.badBody!++;
        return answer(400);
      }
      if (!this.verify(headerOf(request, 'x-bubble-signature'), raw)) {
        this.faults.badSignature!++;
        return answer(401);
      }
      let body: { id?: unknown; deliveries?: unknown };
      try {
        body = JSON.parse(raw.toString('utf8')) as typeof body;
      } catch {
        this.faults.badBody!++;
        return answer(400);
      }
      const id = body.id;
      const deliveries = body.deliveries;
      if (typeof id !== 'string' || !Array.isArray(deliveries) || deliveries.length === 0) {
        this.faults.badBody!++;
        return answer(400);
      }
      if (headerOf(request, 'idempotency-key') !== id) this.faults.keyMismatch!++;
      if (deliveries.length > 100) this.faults.tooManyUsers!++;
      const attempts = (this.attempts.get(id) ?? 0) + 1;
      this.attempts.set(id, attempts);
      if (attempts > 1) count('retriedRequests');
      if (this.failShare > 0 && this.random() < this.failShare) {
        count('refused');
        return answer(503);
      }
      if (this.accepted.has(id)) {
        // A resend of a delivery already answered 200: the phone must not show it twice.
        this.faults.duplicateAccepted!++;
        return answer(200);
      }
      this.accepted.add(id);
      count('deliveries');
      count('userDeliveries', deliveries.length);
      this.phase.largestRequest = Math.max(this.phase.largestRequest, deliveries.length);
      this.total.largestRequest = Math.max(this.total.largestRequest, deliveries.length);
      const now = performance.now();
      this.lastAcceptedAt = now;
      for (const delivery of deliveries as {
        user?: unknown;
        badge?: { conversations?: unknown };
      }[]) {
        if (typeof delivery.user !== 'string' || typeof delivery.badge !== 'object') {
          this.faults.badBody!++;
          continue;
        }
        const last = this.userAcceptedAt.get(delivery.user);
        if (last !== undefined) {
          const gap = now - last;
          if (gap < this.minGapMs) this.minGapMs = gap;
          if (gap < this.minIntervalMs) this.violations++;
        }
        this.userAcceptedAt.set(delivery.user, now);
        this.lastBadge.set(
          delivery.user,
          (delivery.badge?.conversations ?? {}) as Record<string, number>,
        );
      }
      answer(200);
    });
  }

  private verify(header: string | undefined, raw: Buffer): boolean {
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
    if (!match) return false;
    const t = Number(match[1]);
    if (Math.abs(Date.now() / 1000 - t) > SIGNATURE_TOLERANCE_S) return false;
    const expected = createHmac('sha256', this.secret).update(`${t}.`).update(raw).digest();
    return timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'));
  }
}

function headerOf(request: http.IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function totalOf(counts: Record<string, number>): number {
  let total = 0;
  for (const n of Object.values(counts)) total += n;
  return total;
}

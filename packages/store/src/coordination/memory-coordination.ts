import type { NodeInfo, SweepReport } from '@bubble/protocol';
import type { Assignment, Coordination } from './coordination.js';

export interface MemoryCoordinationOptions {
  /** The store's clock: the leader lease and node liveness; default Date.now. */
  now?: () => number;
}

interface Lease {
  node: string;
  expiresAt: number;
}

/** Coordination of the roles running in this one process. */
export class MemoryCoordination implements Coordination {
  private readonly now: () => number;
  private lease: Lease | null = null;
  /** node id → the node's info and the time it stops counting as live. */
  private readonly nodes = new Map<string, { info: NodeInfo; expiresAt: number }>();
  private currentAssignment: Assignment | null = null;
  /** pool → its current token; absent while none is (none taken yet, or retired). */
  private readonly fences = new Map<number, number>();
  private readonly issuedFences = new Map<number, number>();
  private readonly tickHandlers = new Set<(seq: number) => void>();
  private readonly reports = new Map<string, SweepReport>();

  constructor(options: MemoryCoordinationOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  async tryLead(node: string, ttlMs: number): Promise<boolean> {
    const now = this.now();
    const lease = this.liveLease(now);
    if (lease && lease.node !== node) return false;
    this.lease = { node, expiresAt: now + ttlMs };
    return true;
  }

  async resign(node: string): Promise<void> {
    if (this.lease?.node === node) this.lease = null;
  }

  async leader(): Promise<string | null> {
    return this.liveLease(this.now())?.node ?? null;
  }

  async heartbeat(node: NodeInfo, ttlMs: number): Promise<void> {
    this.nodes.set(node.id, { info: { ...node }, expiresAt: this.now() + ttlMs });
  }

  async removeNode(node: string): Promise<void> {
    this.nodes.delete(node);
  }

  async liveNodes(): Promise<NodeInfo[]> {
    const now = this.now();
    const live: NodeInfo[] = [];
    for (const [id, entry] of this.nodes) {
      if (entry.expiresAt > now) live.push({ ...entry.info });
      else this.nodes.delete(id);
    }
    return live.sort(byId);
  }

  async setAssignment(assignment: Assignment): Promise<void> {
    this.currentAssignment = structuredClone(assignment);
  }

  async assignment(): Promise<Assignment | null> {
    return this.currentAssignment && structuredClone(this.currentAssignment);
  }

  async nextFence(pool: number): Promise<number> {
    const next = (this.issuedFences.get(pool) ?? 0) + 1;
    this.issuedFences.set(pool, next);
    this.fences.set(pool, next);
    return next;
  }

  /** The same as currentFence, synchronously: fenced memory writes check it in one step. */
  fenceNow(pool: number): number {
    return this.fences.get(pool) ?? 0;
  }

  /**
   * No token of the pool is accepted until the next nextFence (as saveBadges-8.lua's DEL), which
   * is then larger than `seen` too.
   */
  retireFence(pool: number, seen: number): void {
    this.fences.delete(pool);
    this.issuedFences.set(pool, Math.max(this.issuedFences.get(pool) ?? 0, seen));
  }

  async currentFence(pool: number): Promise<number> {
    return this.fences.get(pool) ?? 0;
  }

  async publishTick(seq: number): Promise<void> {
    // Delivered later, as over Redis: a handler never runs inside the publisher's call.
    for (const handler of this.tickHandlers) {
      queueMicrotask(() => {
        if (this.tickHandlers.has(handler)) handler(seq);
      });
    }
  }

  async onTick(handler: (seq: number) => void): Promise<() => Promise<void>> {
    // Wrapped so the same function subscribed twice gets two independent subscriptions.
    const subscription = (seq: number): void => handler(seq);
    this.tickHandlers.add(subscription);
    return async () => {
      this.tickHandlers.delete(subscription);
    };
  }

  async reportSweep(report: SweepReport): Promise<void> {
    this.reports.set(report.node, { ...report });
  }

  async sweepReports(): Promise<SweepReport[]> {
    return [...this.reports.values()].map((report) => ({ ...report })).sort(byNode);
  }

  private liveLease(now: number): Lease | null {
    if (this.lease && this.lease.expiresAt <= now) this.lease = null;
    return this.lease;
  }
}

function byId(a: NodeInfo, b: NodeInfo): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function byNode(a: SweepReport, b: SweepReport): number {
  return a.node < b.node ? -1 : a.node > b.node ? 1 : 0;
}

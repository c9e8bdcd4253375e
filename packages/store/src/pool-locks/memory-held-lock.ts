import type { HeldLock } from './pool-locks.js';

/** Held until released: nothing in one process can take it away. */
export class MemoryHeldLock implements HeldLock {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal = this.controller.signal;

  constructor(
    readonly resource: string,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly onRelease: () => void,
  ) {}

  validUntil(): number {
    return this.signal.aborted ? 0 : this.now() + this.ttlMs;
  }

  async release(): Promise<void> {
    if (this.signal.aborted) return;
    this.controller.abort(new Error(`lock ${this.resource} released`));
    this.onRelease();
  }
}

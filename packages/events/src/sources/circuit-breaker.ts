export interface BreakerSettings {
  /** Consecutive failed requests that open the breaker. */
  failures: number;
  /** The first pause; each failed probe doubles it. */
  pauseMs: number;
  maxPauseMs: number;
}

/** Whether a request may start now: freely, as the one probe of a pause that ended, or not. */
export type BreakerAdmission = 'free' | 'probe' | 'paused' | 'probing';

/** A change of state that an operator is told about. */
export type BreakerChange =
  | { kind: 'opened'; pauseMs: number }
  | { kind: 'reopened'; pauseMs: number }
  | { kind: 'closed'; openForMs: number };

/**
 * Closed → (failures in a row) → open for a pause → one probe → closed if it succeeds, open
 * again for twice the pause (at most maxPauseMs) if it fails. A request that started before
 * the breaker opened does not close or reopen it: only the probe does.
 */
export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openedAt: number | null = null;
  private pausedUntil = 0;
  private pauseMs: number;
  private probeOut = false;

  constructor(
    private readonly settings: BreakerSettings,
    private readonly clock: () => number,
  ) {
    this.pauseMs = settings.pauseMs;
  }

  get open(): boolean {
    return this.openedAt !== null;
  }

  /** Open, with its pause not over: fetches answer `paused` without a request. */
  paused(): boolean {
    return this.openedAt !== null && !this.probeOut && this.clock() < this.pausedUntil;
  }

  admission(): BreakerAdmission {
    if (this.openedAt === null) return 'free';
    if (this.probeOut) return 'probing';
    return this.clock() < this.pausedUntil ? 'paused' : 'probe';
  }

  /** The request admitted as `probe` is being sent. */
  startProbe(): void {
    this.probeOut = true;
  }

  succeeded(probe: boolean): BreakerChange | null {
    if (this.openedAt === null) {
      this.consecutiveFailures = 0;
      return null;
    }
    if (!probe) return null;
    const openForMs = this.clock() - this.openedAt;
    this.openedAt = null;
    this.probeOut = false;
    this.consecutiveFailures = 0;
    this.pauseMs = this.settings.pauseMs;
    return { kind: 'closed', openForMs };
  }

  failed(probe: boolean): BreakerChange | null {
    const now = this.clock();
    if (this.openedAt === null) {
      this.consecutiveFailures++;
      if (this.consecutiveFailures < this.settings.failures) return null;
      this.openedAt = now;
      this.pausedUntil = now + this.pauseMs;
      return { kind: 'opened', pauseMs: this.pauseMs };
    }
    if (!probe) return null;
    this.probeOut = false;
    this.pauseMs = Math.min(this.settings.maxPauseMs, this.pauseMs * 2);
    this.pausedUntil = now + this.pauseMs;
    return { kind: 'reopened', pauseMs: this.pauseMs };
  }

  /** A probe that ended without a verdict (the client closed): the next request probes. */
  probeAbandoned(): void {
    this.probeOut = false;
  }
}

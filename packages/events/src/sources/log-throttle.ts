/**
 * At most one log line of a kind per `everyMs`, so an endpoint that is down or answers garbage
 * for every user does not flood the log; the line that passes says how many were left out.
 */
export class LogThrottle {
  private readonly kinds = new Map<string, { lastAt: number; suppressed: number }>();

  constructor(
    private readonly everyMs: number,
    private readonly clock: () => number,
  ) {}

  /** null: leave this line out; otherwise how many lines of this kind were left out since. */
  take(kind: string): { suppressed: number } | null {
    const now = this.clock();
    const state = this.kinds.get(kind);
    if (state && now - state.lastAt < this.everyMs) {
      state.suppressed++;
      return null;
    }
    const suppressed = state?.suppressed ?? 0;
    this.kinds.set(kind, { lastAt: now, suppressed: 0 });
    return { suppressed };
  }
}

import { fetchAndInstall, type InstalledInputs } from '@bubble/badges';
import { backoffMs } from '@bubble/protocol';
import type { SourcesFetcher } from '@bubble/protocol';
import type { BubbleStore } from '@bubble/store';
import type { Logger } from 'pino';

export interface SourcesRefillOptions {
  store: BubbleStore;
  fetcher: SourcesFetcher | undefined;
  caps: { follows: number; topics: number };
  /** BUBBLE_SOURCES_TIMEOUT_MS: how long the in-flight mark of a fetch must outlive it. */
  timeoutMs: number;
  /** Whether the core still holds the user (a user let go is no longer fetched). */
  holds: (user: string) => boolean;
  log: Logger;
  /** Users per fetch call (the client batches them again, 100 a request). */
  batch?: number;
  /** Fetch calls in flight at once. */
  inFlight?: number;
  /**
   * Follows (authors and topics) of the installed users handed to one sweep at most (at least
   * one user): the sweep reloads them in one synchronous stretch, which must stay far below
   * half a lease (the watchdog gives every pool up after that long without a heartbeat).
   */
  followsPerSweep?: number;
}

interface Waiting {
  attempts: number;
  dueAt: number;
}

/** A user whose sources were installed, with what the install left in the store. */
export interface Installed {
  user: string;
  inputs: InstalledInputs;
}

const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 30_000;
const PUMP_MS = 250;
const FOLLOWS_PER_SWEEP = 500_000;

/**
 * The held users whose sources the store does not hold (dropped as gone, or lost with the
 * store's data): fetched from the platform's endpoint in the background, in batches, retried
 * with backoff, and handed to the next sweep to reload once installed. Until then their feed
 * counts 0 (docs/semantics.md). The sweep never waits for the endpoint.
 */
export class SourcesRefill {
  private readonly waiting = new Map<string, Waiting>();
  private readonly fetching = new Set<string>();
  /**
   * Installed users not handed to a sweep yet, with what the install left in the store: the
   * sweep takes their follows from here rather than reading back what was just written.
   */
  private readonly installed = new Map<string, InstalledInputs>();
  /** Handed to the last sweep and not settled by its load yet: offered again if it failed. */
  private reloading = new Map<string, InstalledInputs>();
  private calls = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: SourcesRefillOptions) {}

  /** Users waiting for their sources (not yet installed). */
  get waitingCount(): number {
    return this.waiting.size;
  }

  /** Users installed and not handed to a sweep yet. */
  get installedCount(): number {
    return this.installed.size;
  }

  /**
   * Whether the user's sources are on their way (waiting, being fetched, or installed and not
   * loaded yet): what the store holds for them is not what the core counts, and no drift.
   */
  pending(user: string): boolean {
    return (
      this.waiting.has(user) ||
      this.fetching.has(user) ||
      this.installed.has(user) ||
      this.reloading.has(user)
    );
  }

  /** A held user's sources are not in the store: fetch them. */
  need(user: string): void {
    this.reloading.delete(user);
    if (this.stopped || this.waiting.has(user) || this.fetching.has(user)) return;
    this.waiting.set(user, { attempts: 0, dueAt: 0 });
    this.schedule(0);
  }

  /** The user was loaded from sources the store holds: nothing to fetch for them. */
  settled(user: string): void {
    this.waiting.delete(user);
    this.reloading.delete(user);
  }

  /**
   * Users installed and still held, the longest waiting first, up to `followsPerSweep` follows
   * in all: the sweep reloads their follows. The others wait for the next sweeps. Those handed
   * to the sweep before that its load did not settle (the load failed: a command timed out)
   * come first, so none is left with the follows it had before its install.
   */
  takeInstalled(): Installed[] {
    const { holds, followsPerSweep = FOLLOWS_PER_SWEEP } = this.options;
    const again = this.reloading;
    this.reloading = new Map();
    const taken: Installed[] = [];
    let follows = 0;
    const take = (user: string, inputs: InstalledInputs) => {
      if (!holds(user)) return;
      taken.push({ user, inputs });
      follows += sourcesOf(inputs);
      this.reloading.set(user, inputs);
    };
    // Within one sweep's budget already, when it was taken.
    for (const [user, inputs] of again) take(user, inputs);
    for (const [user, inputs] of this.installed) {
      if (taken.length > 0 && follows + sourcesOf(inputs) > followsPerSweep) break;
      this.installed.delete(user);
      take(user, inputs);
    }
    // Room for the fetches held back while installs waited (see pump).
    if (this.waiting.size > 0) this.schedule(0);
    return taken;
  }

  close(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, ms);
    this.timer.unref();
  }

  private pump(): void {
    const { holds, batch = 1000, inFlight = 4 } = this.options;
    const now = Date.now();
    // Fetched answers wait in the store until sweeps take them: no more than a few sweeps'
    // worth ahead, or a mass refill fetches everyone long before any is loaded (and the
    // reconciler, finding them held with no follows in memory, "repairs" them one by one).
    const ahead = batch * inFlight;
    while (this.calls < inFlight && this.installed.size + this.fetching.size < ahead) {
      const due: string[] = [];
      for (const [user, entry] of this.waiting) {
        if (!holds(user)) {
          this.waiting.delete(user);
          continue;
        }
        if (entry.dueAt > now) continue;
        due.push(user);
        if (due.length === batch) break;
      }
      if (due.length === 0) break;
      const attempts = new Map<string, number>();
      for (const user of due) {
        attempts.set(user, this.waiting.get(user)!.attempts);
        this.waiting.delete(user);
        this.fetching.add(user);
      }
      this.calls++;
      void this.fetch(due, attempts).finally(() => {
        this.calls--;
        this.schedule(0);
      });
    }
    if (this.waiting.size > 0) this.schedule(PUMP_MS);
  }

  private async fetch(users: string[], attempts: Map<string, number>): Promise<void> {
    const { store, fetcher, caps, timeoutMs, log } = this.options;
    let installed = new Map<string, InstalledInputs>();
    try {
      if (fetcher) installed = await fetchAndInstall(store, fetcher, users, { caps, timeoutMs });
    } catch (err) {
      log.warn({ err, users: users.length }, "could not install users' sources; retrying");
    }
    const now = Date.now();
    for (const user of users) {
      this.fetching.delete(user);
      const inputs = installed.get(user);
      if (inputs) {
        this.installed.set(user, inputs);
        continue;
      }
      if (this.stopped || !this.options.holds(user)) continue;
      const tries = attempts.get(user)! + 1;
      this.waiting.set(user, {
        attempts: tries,
        dueAt: now + Math.max(100, backoffMs(tries, RETRY_BASE_MS, RETRY_MAX_MS)),
      });
    }
  }
}

function sourcesOf(inputs: InstalledInputs): number {
  return inputs.follows.length + inputs.topics.length;
}

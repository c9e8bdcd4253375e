import { forkDriver, type DriverHandle } from './driver-process.js';
import type { SdkBadges, SdkLatency, SdkProgress, SdkStartArgs, SdkWindow } from './sdk-driver.js';

/** The built driver, also when this module runs from its TS source (the tests import it so). */
const DRIVER_MODULE = import.meta.url.endsWith('.ts')
  ? new URL('../dist/sdk-driver.js', import.meta.url)
  : new URL('./sdk-driver.js', import.meta.url);

/**
 * SDK clients (sdk-driver.ts) spread over several driver processes: a process holds at most
 * its open-files limit of sockets, and one event loop would time its own backlog, not pushes.
 */
export class SdkFleet {
  private constructor(
    readonly drivers: DriverHandle[],
    private readonly slices: Array<{ first: number; users: string[] }>,
  ) {}

  /** Starts `users` (client i follows author authorOf[i]) in `processes` drivers. */
  static async start(options: {
    processes: number;
    users: string[];
    authorOf?: Int32Array;
    log: (line: string) => void;
    client: Omit<SdkStartArgs, 'users' | 'firstIndex' | 'authorOf'>;
  }): Promise<SdkFleet> {
    const { users, processes } = options;
    const per = Math.ceil(users.length / processes);
    const slices = Array.from({ length: processes }, (_, k) => ({
      first: k * per,
      users: users.slice(k * per, (k + 1) * per),
    }));
    const drivers = slices.map((_, k) => forkDriver(DRIVER_MODULE, `sdk-driver-${k}`, options.log));
    const fleet = new SdkFleet(drivers, slices);
    await Promise.all(
      drivers.map((driver, k) =>
        driver.call('start', {
          ...options.client,
          users: slices[k]!.users,
          firstIndex: slices[k]!.first,
          authorOf: options.authorOf?.slice(slices[k]!.first, slices[k]!.first + per),
        } satisfies SdkStartArgs),
      ),
    );
    return fleet;
  }

  get pids(): number[] {
    return this.drivers.map((d) => d.pid);
  }

  /** Starts a new window of attempts and returns. */
  async mark(): Promise<void> {
    await Promise.all(this.drivers.map((d) => d.call('mark')));
  }

  /** Every driver's window since its mark, merged. */
  async window(): Promise<SdkWindow> {
    const windows = await Promise.all(this.drivers.map((d) => d.call<SdkWindow>('window')));
    const merge = (pick: (w: SdkWindow) => Record<string, number>) => {
      const all: Record<string, number> = {};
      for (const w of windows)
        for (const [k, v] of Object.entries(pick(w))) all[k] = (all[k] ?? 0) + v;
      return all;
    };
    const concat = (pick: (w: SdkWindow) => Float64Array) => {
      const parts = windows.map(pick);
      const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        out.set(p, at);
        at += p.length;
      }
      return out.sort();
    };
    return {
      attempts: concat((w) => w.attempts),
      backs: concat((w) => w.backs),
      refused: merge((w) => w.refused),
      closedEarly: merge((w) => w.closedEarly),
      errors: merge((w) => w.errors),
    };
  }

  /** The badge every client holds, whether it is open, in user order. */
  async badges(): Promise<SdkBadges> {
    const parts = await Promise.all(this.drivers.map((d) => d.call<SdkBadges>('badges')));
    const users = parts.flatMap((p) => p.users);
    const join = <T extends Int32Array | Uint8Array>(
      pick: (p: SdkBadges) => T,
      make: (n: number) => T,
    ) => {
      const out = make(users.length);
      let at = 0;
      for (const p of parts) {
        out.set(pick(p), at);
        at += pick(p).length;
      }
      return out;
    };
    return {
      users,
      open: join(
        (p) => p.open,
        (n) => new Uint8Array(n),
      ),
      epochs: parts.flatMap((p) => p.epochs),
      versions: join(
        (p) => p.versions,
        (n) => new Int32Array(n),
      ),
      feeds: join(
        (p) => p.feeds,
        (n) => new Int32Array(n),
      ),
    };
  }

  /** Clients open now (in all, per gateway), lost since the mark, and of those back. */
  async progress(): Promise<SdkProgress> {
    const parts = await Promise.all(this.drivers.map((d) => d.call<SdkProgress>('progress')));
    return {
      open: parts.reduce((n, p) => n + p.open, 0),
      onGateway: parts[0]!.onGateway.map((_, g) => parts.reduce((n, p) => n + p.onGateway[g]!, 0)),
      lost: parts.reduce((n, p) => n + p.lost, 0),
      back: parts.reduce((n, p) => n + p.back, 0),
    };
  }

  /** A post of `author` was answered at `answerAt` (wall clock). */
  announce(author: number, answerAt: number): void {
    for (const d of this.drivers) d.post('post', { author, answerAt });
  }

  /** The push latencies since the last call, merged. */
  async latency(): Promise<SdkLatency> {
    const parts = await Promise.all(this.drivers.map((d) => d.call<SdkLatency>('latency')));
    const histogram = new Uint32Array(parts[0]!.histogram.length);
    for (const p of parts)
      for (let i = 0; i < histogram.length; i++) histogram[i]! += p.histogram[i]!;
    return {
      histogram,
      samples: parts.reduce((n, p) => n + p.samples, 0),
      overdue: parts.reduce((n, p) => n + p.overdue, 0),
    };
  }

  /** `count` open clients, spread over the drivers, close and start again. */
  async churn(count: number): Promise<number> {
    const each = Math.ceil(count / this.drivers.length);
    const done = await Promise.all(
      this.drivers.map((d) => d.call<number>('churn', { count: each })),
    );
    return done.reduce((a, b) => a + b, 0);
  }

  /** `count` open clients close for good; their users. */
  async end(count: number): Promise<string[]> {
    const each = Math.ceil(count / this.drivers.length);
    const parts = await Promise.all(
      this.drivers.map((d) => d.call<string[]>('end', { count: each })),
    );
    return parts.flat();
  }

  async close(): Promise<void> {
    await Promise.all(this.drivers.map((d) => d.call('close').catch(() => {})));
    await Promise.all(this.drivers.map((d) => d.stop(5000)));
  }

  /** For logs. */
  describeSlices(): string {
    return this.slices.map((s) => `${s.first}+${s.users.length}`).join(', ');
  }
}

/** Value at quantile q (0..1) of a latency histogram of 1 ms buckets. */
export function histogramQuantile(
  histogram: Uint32Array,
  samples: number,
  q: number,
): number | null {
  if (samples === 0) return null;
  const rank = Math.ceil(q * samples);
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) return i;
  }
  return histogram.length - 1;
}

/** Per-second counts of `times` (wall-clock ms, sorted) from `from` to the last one. */
export function perSecond(times: Float64Array, from: number): number[] {
  if (times.length === 0) return [];
  const buckets = new Array<number>(Math.floor((times[times.length - 1]! - from) / 1000) + 1).fill(
    0,
  );
  for (const t of times) buckets[Math.max(0, Math.floor((t - from) / 1000))]!++;
  return buckets;
}

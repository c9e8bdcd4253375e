/**
 * `ws-ceiling`: how many badge frames this machine can move over loopback WebSockets at all —
 * a bare `ws` server writing to 10k clients round-robin as fast as they take them, received by
 * the same driver processes `latency` uses. No Redis, no core, no routing: the ceiling any
 * gateway on this machine works under, to read `latency` against (docs/benchmarks.md).
 */
import type { BenchOptions } from './bench-options.js';
import { forkDriver, type DriverHandle } from './driver-process.js';
import { machineFacts, round2, sleep } from './live-stack.js';
import type { BlastResult } from './ws-ceiling-sender.js';
import type { WsConnectResult, WsReport } from './ws-driver.js';

export interface WsCeilingOptions extends BenchOptions {
  clients: number;
  drivers: number;
  perAddress: number;
  connectConcurrency: number;
  connectSeconds: number;
  warmupSeconds: number;
  seconds: number;
  /**
   * After the ceiling, as long again at this rate and rhythm (ws-ceiling-sender.ts, `pace`):
   * what the same writes cost at another sender's rate (`latency`: the gateway's).
   */
  pace?: { framesPerSec: number; tickMs: number };
}

export const WS_CEILING_DEFAULTS: WsCeilingOptions = {
  clients: 10_000,
  drivers: 2,
  perAddress: 40,
  connectConcurrency: 200,
  connectSeconds: 120,
  warmupSeconds: 2,
  seconds: 10,
  log: () => {},
};

export async function benchWsCeiling(
  overrides: Partial<WsCeilingOptions> = {},
): Promise<Record<string, unknown>> {
  const options = { ...WS_CEILING_DEFAULTS, ...overrides };
  const { log } = options;
  const drivers: DriverHandle[] = [];
  try {
    for (let d = 0; d < options.drivers; d++) {
      drivers.push(forkDriver(new URL('./ws-driver.js', import.meta.url), `driver${d}`, log));
    }
    const ceiling = await measureCeiling(drivers, options);
    return {
      scenario: 'ws-ceiling',
      ...ceiling,
      ...machineFacts(),
    };
  } finally {
    for (const child of drivers.reverse()) await child.stop().catch(() => {});
  }
}

export type CeilingFigures = Awaited<ReturnType<typeof measureCeiling>>;

/**
 * The bare sender in a child of its own, `options.clients` clients of it spread over `drivers`
 * (ws-driver processes, fresh or reset after another phase), and the frames they take.
 */
export async function measureCeiling(
  drivers: DriverHandle[],
  options: Omit<WsCeilingOptions, 'drivers'>,
) {
  const { log } = options;
  const sender = forkDriver(new URL('./ws-ceiling-sender.js', import.meta.url), 'sender', log);
  try {
    const port = await sender.call<number>('listen');
    const per = Math.ceil(options.clients / drivers.length);
    const connects = await Promise.all(
      drivers.map((driver, d) => {
        const from = d * per;
        const to = Math.min(options.clients, from + per);
        return driver.call<WsConnectResult>('connect', {
          url: `ws://127.0.0.1:${port}/v1/ws`,
          users: Array.from({ length: to - from }, (_, i) => `u${from + i}`),
          firstIndex: from,
          perAddress: options.perAddress,
          // The bare server reads no token; the drivers send one as they do to a gateway.
          jwtSecret: 'ws-ceiling',
          concurrency: Math.ceil(options.connectConcurrency / drivers.length),
          seconds: options.connectSeconds,
        });
      }),
    );
    const connected = connects.reduce((sum, r) => sum + r.connected, 0);
    log(`ws-ceiling: ${connected} clients connected; ${options.warmupSeconds} s warm-up`);
    if (connected < options.clients * 0.99) {
      throw new Error(`only ${connected} of ${options.clients} clients connected`);
    }
    // Each client got one frame on connecting; then the warm-up's, all received before measuring.
    const warmup = await sender.call<BlastResult>('blast', { seconds: options.warmupSeconds });
    await allReceived(drivers, connected + warmup.frames);

    log(`ws-ceiling: writing frames for ${options.seconds} s`);
    await Promise.all(drivers.map((d) => d.call('measure', { on: true })));
    const blast = await sender.call<BlastResult>('blast', { seconds: options.seconds });
    // Nothing is buffered past one frame a socket: the last ones arrive within moments.
    let written = connected + warmup.frames + blast.frames;
    await allReceived(drivers, written);
    await Promise.all(drivers.map((d) => d.call('measure', { on: false })));
    const reports = await Promise.all(drivers.map((d) => d.call<WsReport>('report')));
    const received = reports.reduce((sum, r) => sum + r.framesMeasured, 0);
    const receiverCpu = reports.reduce((sum, r) => sum + r.cpuSeconds, 0);
    const measured = Math.max(...reports.map((r) => r.measuredSeconds));
    const framesPerSec = received / measured;
    let paced:
      | (ReturnType<typeof senderFigures> & {
          targetFramesPerSec: number;
          tickMs: number;
          framesPerSec: number;
        })
      | undefined;
    if (options.pace) {
      const { framesPerSec: rate, tickMs } = options.pace;
      log(
        `ws-ceiling: ${Math.round(rate)} frames/s in bursts every ${tickMs} ms for ${options.seconds} s`,
      );
      const slow = await sender.call<BlastResult>('blast', {
        seconds: options.seconds,
        pace: options.pace,
      });
      written += slow.frames;
      await allReceived(drivers, written);
      paced = {
        targetFramesPerSec: Math.round(rate),
        tickMs,
        framesPerSec: Math.round(slow.frames / slow.seconds),
        ...senderFigures(slow),
      };
    }
    return {
      clients: connected,
      framesPerSec: Math.round(framesPerSec),
      framesWritten: blast.frames,
      framesReceived: received,
      skippedBusySockets: blast.skipped,
      // One frame to every client, at this rate: the shortest a round of pushes can take.
      msPerFrameToEveryClient: round2((connected / framesPerSec) * 1000),
      cpuCores: {
        sender: round2(blast.cpuSeconds / blast.seconds),
        receivers: round2(receiverCpu / measured),
      },
      ...senderFigures(blast),
      receiverCpuUsPerFrame: round2((receiverCpu / received) * 1e6),
      measuredSeconds: round2(measured),
      ...(paced && { paced }),
    };
  } finally {
    await sender.stop().catch(() => {});
  }
}

/** The sender's CPU per frame written, the kernel's part of it, and its preemptions. */
function senderFigures(blast: BlastResult) {
  return {
    senderCpuUsPerFrame: round2((blast.cpuSeconds / blast.frames) * 1e6),
    senderKernelUsPerFrame: round2((blast.kernelSeconds / blast.frames) * 1e6),
    senderInvoluntarySwitchesPerKFrames:
      blast.involuntarySwitches === null
        ? null
        : round2((blast.involuntarySwitches / blast.frames) * 1000),
  };
}

/** Waits (5 s at most) until the drivers have received `frames` frames in all. */
async function allReceived(drivers: DriverHandle[], frames: number): Promise<void> {
  const deadline = performance.now() + 5000;
  for (;;) {
    const counts = await Promise.all(drivers.map((d) => d.call<number>('frames')));
    const received = counts.reduce((sum, n) => sum + n, 0);
    if (received >= frames) return;
    if (performance.now() > deadline) {
      throw new Error(`the clients received ${received} of the ${frames} frames written`);
    }
    await sleep(50);
  }
}

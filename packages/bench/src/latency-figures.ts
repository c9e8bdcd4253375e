import os from 'node:os';
import { round2 } from './live-stack.js';
import type { ProbeRecord } from './probe-reader.js';
import { pushFigures } from './push-metrics.js';
import { percentile } from './workload.js';
import type { CeilingFigures } from './ws-ceiling.js';
import type { LatencyOptions } from './latency-options.js';
import type { mergeReports } from './ws-report.js';

export interface RunFigures {
  calls: number;
  measuredCalls: number;
  postsPerSec: number;
  answerP50Ms: number;
  answerP99Ms: number;
  sweeps: ProbeRecord[];
  cpu: Record<string, number | null>;
  /** Of the gateway's CPU, the cores spent in the kernel (its socket writes and reads). */
  gatewayKernelCores: number | null;
  /** Times the gateway was descheduled while it could run, over the measured stretch. */
  gatewayInvoluntarySwitches: number | null;
  benchLag: { p50Ms: number; p99Ms: number; maxMs: number };
  /** The gateway's own push-queue metrics over the measured stretch. */
  pushQueue: ReturnType<typeof pushFigures> | null;
}

/**
 * bench.md's bars for `latency` beside the figures they are made of: CPU per frame against the
 * bare sender, p99 against what the machine needs (tick + sweep p99 + one frame to every user
 * at the ceiling's rate), and for `latency-moderate` the demand as a share of the ceiling.
 */
export function ceilingFigures(
  options: LatencyOptions,
  merged: ReturnType<typeof mergeReports>,
  run: RunFigures,
  sweeps: ReturnType<typeof sweepFigures>,
  ceiling: CeilingFigures,
) {
  const gatewayFramesPerSec = merged.frames / Math.max(0.001, merged.seconds);
  const gatewayCores = run.cpu.gateway ?? null;
  const gatewayCpuUsPerFrame =
    gatewayCores === null || gatewayFramesPerSec === 0
      ? null
      : round2((gatewayCores / gatewayFramesPerSec) * 1e6);
  const minRoundMs = round2((options.users / ceiling.framesPerSec) * 1000);
  const latencyBarMs = round2(1.25 * (options.tickMs + sweeps.sweepP99Ms + minRoundMs));
  const gatewayKernelUsPerFrame =
    run.gatewayKernelCores === null || gatewayFramesPerSec === 0
      ? null
      : round2((run.gatewayKernelCores / gatewayFramesPerSec) * 1e6);
  const cpuPerFrameRatio =
    gatewayCpuUsPerFrame === null
      ? null
      : round2(gatewayCpuUsPerFrame / ceiling.senderCpuUsPerFrame);
  // Frames needed: one per routed change, had the gateway conflated none away.
  const neededPerSec = run.pushQueue ? run.pushQueue.routed / Math.max(0.001, merged.seconds) : 0;
  return {
    gatewayFramesPerSec: Math.round(gatewayFramesPerSec),
    ceilingFramesPerSec: ceiling.framesPerSec,
    ceilingRatio: round2(gatewayFramesPerSec / ceiling.framesPerSec),
    gatewayCpuUsPerFrame,
    ceilingSenderCpuUsPerFrame: ceiling.senderCpuUsPerFrame,
    cpuPerFrameRatio,
    // Of each figure above, the part spent in the kernel: the socket writes a frame needs.
    gatewayKernelUsPerFrame,
    ceilingSenderKernelUsPerFrame: ceiling.senderKernelUsPerFrame,
    // How often each was descheduled while it could run, per 1,000 frames it sent.
    gatewayInvoluntarySwitchesPerKFrames:
      run.gatewayInvoluntarySwitches === null || merged.frames === 0
        ? null
        : round2((run.gatewayInvoluntarySwitches / merged.frames) * 1000),
    ceilingSenderInvoluntarySwitchesPerKFrames: ceiling.senderInvoluntarySwitchesPerKFrames,
    // The bare sender paced to the gateway's frames/s in bursts a tick apart: not the bar's
    // yardstick, which is the ceiling above; what the same writes cost at the gateway's rate.
    ...(ceiling.paced && {
      pacedSenderCpuUsPerFrame: ceiling.paced.senderCpuUsPerFrame,
      pacedSenderKernelUsPerFrame: ceiling.paced.senderKernelUsPerFrame,
      pacedSenderFramesPerSec: ceiling.paced.framesPerSec,
      pacedCpuPerFrameRatio:
        gatewayCpuUsPerFrame === null
          ? null
          : round2(gatewayCpuUsPerFrame / ceiling.paced.senderCpuUsPerFrame),
    }),
    cpuPerFrameBarMet: cpuPerFrameRatio !== null && cpuPerFrameRatio <= 1.5,
    tickMs: options.tickMs,
    minRoundMs,
    latencyBar: `1.25 × (${options.tickMs} + ${sweeps.sweepP99Ms} + ${minRoundMs}) = ${latencyBarMs} ms against pushP99Ms ${merged.p99Ms}`,
    latencyBarMs,
    latencyBarMet: merged.p99Ms <= latencyBarMs,
    framesNeededPerSec: Math.round(neededPerSec),
    demandRatio: round2(neededPerSec / ceiling.framesPerSec),
    moderateBarMet: merged.p99Ms <= 250,
  };
}

/** The core's sweeps during the measured stretch, from its probe. */
export function sweepFigures(records: ProbeRecord[]) {
  const durations = records.map((r) => r.report.durationMs).sort((a, b) => a - b);
  const intervals = records
    .slice(1)
    .map((r, i) => r.report.at - records[i]!.report.at)
    .sort((a, b) => a - b);
  const changed = records.map((r) => r.report.changed).sort((a, b) => a - b);
  const repaired =
    records.length > 0
      ? records.at(-1)!.report.driftRepaired - records[0]!.report.driftRepaired
      : 0;
  return {
    sweeps: records.length,
    sweepP50Ms: percentile(durations, 50),
    sweepP99Ms: percentile(durations, 99),
    sweepIntervalP50Ms: percentile(intervals, 50),
    sweepIntervalP99Ms: percentile(intervals, 99),
    changedPerSweep: percentile(changed, 50),
    sweepRedisCmdsP50: percentile(
      records.map((r) => r.commands).sort((a, b) => a - b),
      50,
    ),
    driftRepairedInRun: repaired,
    // BUBBLE_BENCH_NO_RECONCILE=1 (passed on to the core) turns it off, for diagnosis only.
    reconciliation: process.env.BUBBLE_BENCH_NO_RECONCILE === '1' ? 'off (diagnostic)' : 'on',
    loadAverage1m: round2(os.loadavg()[0]!),
  };
}

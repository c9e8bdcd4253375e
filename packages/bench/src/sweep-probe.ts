/**
 * Preloaded (`node --import`) into the bubble-core child of the sweep scenario. Counts every
 * command any ioredis client of the process sends (the store's, the lock quorum's, the tick
 * subscriber's) and, when the core stores a SweepReport (HSET …:{g}:sweeps), appends one JSON line
 * to $BUBBLE_BENCH_PROBE: that report and the commands sent since the previous one, by name.
 * It only observes; nothing the core does changes — unless BUBBLE_BENCH_NO_RECONCILE=1 is set,
 * a diagnostic that turns the core's per-sweep reconciliation off (never in `bubble bench`).
 */
import { appendFileSync } from 'node:fs';
import { Redis, type Command } from 'ioredis';
import { CoreNode } from '@bubble/core';
import { commandLabel } from './redis-probe.js';

const file = process.env.BUBBLE_BENCH_PROBE;

if (file) {
  const original = Redis.prototype.sendCommand;
  const seen = new WeakSet<Command>();
  let total = 0;
  let byName: Record<string, number> = {};
  Redis.prototype.sendCommand = function (this: Redis, command, stream) {
    if (!seen.has(command)) {
      seen.add(command);
      total++;
      const label = commandLabel(command);
      byName[label] = (byName[label] ?? 0) + 1;
      const key = command.args[0];
      if (command.name === 'hset' && typeof key === 'string' && key.endsWith(':{g}:sweeps')) {
        const report = JSON.parse(String(command.args[2])) as unknown;
        appendFileSync(file, `${JSON.stringify({ report, commands: total, byName })}\n`);
        total = 0;
        byName = {};
      }
    }
    return original.call(this, command, stream);
  };
}

if (process.env.BUBBLE_BENCH_NO_RECONCILE === '1') {
  (CoreNode.prototype as unknown as { reconcile: () => Promise<number> }).reconcile = () =>
    Promise.resolve(0);
}

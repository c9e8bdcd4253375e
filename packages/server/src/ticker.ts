import { createTask, validate } from 'node-cron';

/** BUBBLE_TICK: a period in milliseconds, or a node-cron expression (6 fields for seconds). */
export function parseTick(
  spec: string,
): { kind: 'interval'; ms: number } | { kind: 'cron'; expression: string } {
  if (/^\d+$/.test(spec)) {
    const ms = Number(spec);
    if (ms < 50) throw new Error(`BUBBLE_TICK ${spec} ms is below the 50 ms floor`);
    return { kind: 'interval', ms };
  }
  if (!validate(spec))
    throw new Error(`BUBBLE_TICK ${JSON.stringify(spec)} is not a node-cron expression`);
  return { kind: 'cron', expression: spec };
}

/** The period a tick spec stands for, for timeouts that scale with it (cron: its next gap). */
export function tickPeriodMs(spec: string): number {
  const tick = parseTick(spec);
  if (tick.kind === 'interval') return tick.ms;
  const task = createTask(tick.expression, () => {});
  const [first, second] = task.getNextRuns(2);
  void task.destroy();
  return first && second ? second.getTime() - first.getTime() : 1000;
}

/** Calls `fire` on every tick until the returned stop is called. */
export function startTicker(spec: string, fire: () => void): () => Promise<void> {
  const tick = parseTick(spec);
  if (tick.kind === 'interval') {
    const timer = setInterval(fire, tick.ms);
    return async () => clearInterval(timer);
  }
  const task = createTask(tick.expression, () => fire(), {
    name: 'bubble-sweep-tick',
    noOverlap: false,
  });
  void task.start();
  return async () => {
    await task.destroy();
  };
}

/** The figures of a `bubble simulate` run, counted as it goes and summed up at its end. */

/** What ended the run: its duration, Ctrl-C / SIGTERM, or the gateway refusing the key. */
export type StopCause = 'duration' | 'signal' | 'unauthorized';

export interface SimStats {
  follows: number;
  postsSent: number;
  accepted: number;
  ignored: number;
  pushes: number;
  initialBadges: number;
  reads: number;
  polls: number;
  connected: number;
  peakConnected: number;
  reconnects: number;
  throttled: number;
  errors: number;
  errorSamples: Map<string, number>;
}

export interface SimulationSummary {
  url: string;
  seed: number;
  users: number;
  follows: number;
  clients: { target: number; connectedAtEnd: number; peak: number; reconnects: number };
  durationS: number;
  stoppedBy: StopCause;
  posts: { sent: number; accepted: number; ignored: number; perSecond: number };
  pushes: { received: number; perSecond: number };
  initialBadges: number;
  reads: number;
  polls: number;
  throttled: number;
  errors: { total: number; samples: Record<string, number> };
}

/** Fresh counters for a run. */
export function newSimStats(): SimStats {
  return {
    follows: 0,
    postsSent: 0,
    accepted: 0,
    ignored: 0,
    pushes: 0,
    initialBadges: 0,
    reads: 0,
    polls: 0,
    connected: 0,
    peakConnected: 0,
    reconnects: 0,
    throttled: 0,
    errors: 0,
    errorSamples: new Map(),
  };
}

const STOP_CAUSES: Record<StopCause, string> = {
  duration: 'its duration',
  signal: 'a signal',
  unauthorized: 'the gateway refusing the API key',
};

/** The summary as people read it. */
export function formatSummary(s: SimulationSummary): string {
  const lines = [
    `simulation against ${s.url} (seed ${s.seed}), ${s.durationS} s, stopped by ${STOP_CAUSES[s.stoppedBy]}`,
    `  users          ${s.users} (${s.follows} follows)`,
    `  clients        ${s.clients.connectedAtEnd}/${s.clients.target} connected at the end, peak ${s.clients.peak}, ${s.clients.reconnects} reconnects`,
    `  posts          ${s.posts.sent} sent (${s.posts.perSecond}/s), ${s.posts.accepted} accepted, ${s.posts.ignored} ignored`,
    `  pushes         ${s.pushes.received} received (${s.pushes.perSecond}/s), plus ${s.initialBadges} initial badges`,
    `  reads · polls  ${s.reads} · ${s.polls}`,
    `  throttled      ${s.throttled}`,
    `  errors         ${s.errors.total}`,
  ];
  for (const [message, n] of Object.entries(s.errors.samples)) lines.push(`    ${n}× ${message}`);
  return `${lines.join('\n')}\n`;
}

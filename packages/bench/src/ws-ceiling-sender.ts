/**
 * The sender of `ws-ceiling` (a driver process): a bare `ws` server that writes badge frames to
 * its clients round-robin as fast as it can — the part of a push no gateway can skip (make the
 * badge, serialize it, one WebSocket frame to one socket), and nothing else.
 */
import { performance } from 'node:perf_hooks';
import { makeBadge } from '@bubble/protocol';
import { WebSocketServer, type WebSocket } from 'ws';
import { processContextSwitches } from './children.js';
import { serveDriver } from './driver-process.js';

export interface BlastResult {
  frames: number;
  /** Turns at a socket that still had unsent bytes, so got no frame (never buffered). */
  skipped: number;
  seconds: number;
  cpuSeconds: number;
  /** Of it, in the kernel (the socket writes). */
  kernelSeconds: number;
  /** Times the sender was descheduled while it could run (another process woken or due). */
  involuntarySwitches: number | null;
}

/** Frames written per turn of the event loop, as the gateway does. */
const SLICE = 512;

const peers: WebSocket[] = [];
let version = 0;

/**
 * `pace`: instead of as fast as the clients take them, `framesPerSec` frames in bursts every
 * `tickMs`, each burst written in slices as the gateway writes a sweep's changes: the bare
 * sender's cost per frame at the gateway's own rate and rhythm.
 */
export interface BlastArgs {
  seconds: number;
  pace?: { framesPerSec: number; tickMs: number };
}

serveDriver({
  listen: () => listen(),
  blast: (args: BlastArgs) => blast(args),
});

function listen(): Promise<number> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  wss.on('connection', (ws) => {
    peers.push(ws);
    // Clients count as connected at their first badge frame, as with the gateway.
    ws.send(frame(peers.length - 1));
  });
  return new Promise((resolve, reject) => {
    wss.once('listening', () => resolve((wss.address() as { port: number }).port));
    wss.once('error', reject);
  });
}

function frame(client: number): string {
  const counts = {
    feed: version % 1000,
    notices: 0,
    conversations: {},
    conversationsTotal: 0,
    reddots: [],
    counters: {},
  };
  const badge = makeBadge(
    `u${client}`,
    counts,
    { epoch: 'k3fA9zQx', version: ++version },
    Date.now(),
    99,
  );
  return JSON.stringify({ type: 'badge', badge });
}

async function blast({ seconds, pace }: BlastArgs): Promise<BlastResult> {
  const switches = await processContextSwitches('self');
  const cpu = process.cpuUsage();
  const started = performance.now();
  const until = started + seconds * 1000;
  let frames = 0;
  let skipped = 0;
  let next = 0;
  /** Frames the pace asks for and not yet written (paced blasts only). */
  let owed = 0;
  let nextTick = started;
  const result = await new Promise<Omit<BlastResult, 'involuntarySwitches'>>((resolve) => {
    const slice = () => {
      const now = performance.now();
      if (now >= until || peers.length === 0) {
        const used = process.cpuUsage(cpu);
        resolve({
          frames,
          skipped,
          seconds: (now - started) / 1000,
          cpuSeconds: (used.user + used.system) / 1e6,
          kernelSeconds: used.system / 1e6,
        });
        return;
      }
      if (pace) {
        while (now >= nextTick) {
          owed += (pace.framesPerSec * pace.tickMs) / 1000;
          nextTick += pace.tickMs;
        }
        if (owed < 1) {
          setTimeout(slice, Math.max(0, nextTick - now));
          return;
        }
      }
      const turn = pace ? Math.min(SLICE, Math.floor(owed)) : SLICE;
      for (let k = 0; k < turn; k++) {
        const i = next++ % peers.length;
        const ws = peers[i]!;
        if (ws.bufferedAmount > 0) {
          skipped++;
          continue;
        }
        ws.send(frame(i));
        frames++;
      }
      owed -= turn;
      setImmediate(slice);
    };
    slice();
  });
  const after = await processContextSwitches('self');
  return {
    ...result,
    involuntarySwitches: switches && after && after.involuntary - switches.involuntary,
  };
}

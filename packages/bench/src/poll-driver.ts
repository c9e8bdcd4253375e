/**
 * A driver process (forkDriver) polling `GET /v1/badge` for many users over pipelined
 * keep-alive connections (RawHttpConnection): each connection keeps `depth` requests in flight
 * and sends the next one as each answer arrives.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { serveDriver } from './driver-process.js';
import { RawHttpConnection, headerValue, httpRequest, type RawResponse } from './http-client.js';
import { mintJwt, sourceAddress } from './identity.js';

export interface PollInitArgs {
  host: string;
  port: number;
  users: string[];
  firstIndex: number;
  jwtSecret: string;
  connections: number;
  depth: number;
}

export interface PollRunResult {
  responses: number;
  seconds: number;
  byStatus: Record<string, number>;
  lag: { p50Ms: number; p99Ms: number; maxMs: number };
  cpuSeconds: number;
}

let connections: RawHttpConnection[] = [];
let plain: Buffer[] = [];
let conditional: Buffer[] = [];
let depth = 1;

serveDriver({
  init: (args: PollInitArgs) => init(args),
  prime: (args: { depth: number }) => prime(args.depth),
  run: (args: { conditional: boolean; seconds: number }) => run(args.conditional, args.seconds),
  close: () => {
    for (const connection of connections) connection.close();
  },
});

async function init(args: PollInitArgs): Promise<number> {
  depth = args.depth;
  plain = args.users.map((user) => {
    const token = mintJwt(args.jwtSecret, user, 3 * 3600);
    return httpRequest('GET', '/v1/badge', { Authorization: `Bearer ${token}` });
  });
  connections = await Promise.all(
    Array.from({ length: args.connections }, (_, c) =>
      RawHttpConnection.connect(args.host, args.port, sourceAddress(args.firstIndex + c, 1)),
    ),
  );
  return connections.length;
}

/**
 * One plain poll per user (each a cold start that holds the user on the gateway); keeps each
 * user's ETag for the conditional polls.
 */
async function prime(primeDepth: number): Promise<{ statuses: Record<string, number> }> {
  const statuses: Record<string, number> = {};
  conditional = new Array<Buffer>(plain.length);
  let next = 0;
  const worker = async (connection: RawHttpConnection) => {
    while (next < plain.length) {
      const u = next++;
      const response = await connection.request(plain[u]!);
      statuses[response.status] = (statuses[response.status] ?? 0) + 1;
      const etag = headerValue(response.head, 'etag') ?? '"none"';
      const text = plain[u]!.toString('latin1');
      conditional[u] = Buffer.from(`${text.slice(0, -2)}If-None-Match: ${etag}\r\n\r\n`, 'latin1');
    }
  };
  await Promise.all(
    connections.flatMap((connection) =>
      Array.from({ length: primeDepth }, () => worker(connection)),
    ),
  );
  return { statuses };
}

/** Polls for `seconds`; counts the answers that arrive within them. */
function run(useConditional: boolean, seconds: number): Promise<PollRunResult> {
  const requests = useConditional ? conditional : plain;
  const byStatus: Record<string, number> = {};
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const endsAt = started + seconds * 1000;
  let responses = 0;
  let running = true;
  return new Promise((resolve) => {
    connections.forEach((connection, c) => {
      // Connection c polls users c, c + n, c + 2n, … round robin.
      let u = c;
      const step = connections.length;
      const onResponse = (response: RawResponse) => {
        if (!running) return;
        responses++;
        byStatus[response.status] = (byStatus[response.status] ?? 0) + 1;
        sendNext();
      };
      const sendNext = () => {
        connection.send(requests[u]!, onResponse);
        u += step;
        if (u >= requests.length) u = c;
      };
      connection.cork();
      for (let k = 0; k < depth && c < requests.length; k++) sendNext();
      connection.uncork();
    });
    setTimeout(
      () => {
        running = false;
        const elapsed = (performance.now() - started) / 1000;
        lag.disable();
        const cpu = process.cpuUsage(cpuBefore);
        const ms = (ns: number) => Math.round(ns / 1e4) / 100;
        // Let the answers in flight arrive so the connections are clean for the next run.
        void waitDrained().then(() =>
          resolve({
            responses,
            seconds: elapsed,
            byStatus,
            lag: {
              p50Ms: ms(lag.percentile(50)),
              p99Ms: ms(lag.percentile(99)),
              maxMs: ms(lag.max),
            },
            cpuSeconds: (cpu.user + cpu.system) / 1e6,
          }),
        );
      },
      Math.max(0, endsAt - performance.now()),
    );
  });
}

async function waitDrained(): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline && connections.some((c) => c.inFlight > 0)) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

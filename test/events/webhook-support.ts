/**
 * What the offline-delivery tests share: a store, badge service and job queue on a real
 * redis-server (one per test file), delivery workers with short times, and a real local HTTP
 * receiver whose answers a test scripts (status and headers per request), recording every
 * request with its signature checked.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BadgeService } from '@bubble/badges';
import {
  redisOfflineJobs,
  startDeliveryWorkers,
  verifyWebhook,
  type DeliveryWorkers,
  type DeliveryWorkersOptions,
  type WebhookDelivery,
  type WebhookSource,
} from '@bubble/events';
import { RedisStore, RedisWebhookQueue } from '@bubble/store';
import {
  freePort,
  startRedisServer,
  uniquePrefix,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll } from 'vitest';

export const SECRET = 'webhook-test-secret-7d3f0a9c2b4e6f81a5c3';

export interface Stack {
  store: RedisStore;
  service: BadgeService;
  queue: RedisWebhookQueue;
  close(): Promise<void>;
}

export async function startStack(
  redisUrl: string,
  sources: WebhookSource[] = ['conversations', 'notices', 'reddots'],
): Promise<Stack> {
  const store = new RedisStore({ url: redisUrl, keyPrefix: uniquePrefix('wh'), pools: 100 });
  await store.syncClock();
  const queue = new RedisWebhookQueue(store.redis, store.keys);
  const service = new BadgeService(
    store,
    store.clock,
    {},
    { offlineJobs: redisOfflineJobs(queue, sources) },
  );
  return { store, service, queue, close: () => store.close() };
}

export interface Workers extends DeliveryWorkers {
  registry: Registry;
}

export async function startWorkers(
  stack: Stack,
  url: string,
  options: Partial<DeliveryWorkersOptions> = {},
): Promise<Workers> {
  const registry = new Registry();
  const workers = await startDeliveryWorkers(stack.store.redis, stack.store.keys, stack.service, {
    url,
    secret: SECRET,
    consumer: `worker-${Math.random().toString(36).slice(2, 8)}`,
    timeoutMs: 2_000,
    minIntervalMs: 300,
    retryBaseMs: 50,
    retryMaxMs: 400,
    maxAttempts: 50,
    claimMs: 1_000,
    leaseMs: 2_000,
    pollMs: 20,
    blockMs: 200,
    registry,
    ...options,
  });
  return Object.assign(workers, { registry });
}

/** The value of one series of a metric, 0 when absent. */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  const series = metric?.values.find((v) =>
    Object.entries(labels).every(([k, value]) => v.labels[k] === value),
  );
  return series?.value ?? 0;
}

export interface ReceivedRequest {
  id: string;
  idempotencyKey: string;
  signatureValid: boolean;
  contentType: string;
  deliveries: WebhookDelivery[];
  /** When it arrived (this host's clock) and what the receiver answered. */
  at: number;
  status: number;
}

export type Answer = { status: number; headers?: Record<string, string> };

/** A real HTTP receiver on 127.0.0.1; `answer` decides each response (default 200). */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  answer: (request: ReceivedRequest, nth: number) => Answer = () => ({ status: 200 });
  /** While set, a request waits for it before it is answered: requests in flight pile up. */
  gate: Promise<void> | null = null;
  /** Requests read and not answered yet, and the most there were at once. */
  open = 0;
  maxOpen = 0;
  private server: Server | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/push`;
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    (this as { port: number }).port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The requests answered 2xx. */
  accepted(): ReceivedRequest[] {
    return this.requests.filter((r) => r.status >= 200 && r.status < 300);
  }

  /** Each user's deliveries in the accepted requests, in order of arrival. */
  deliveriesByUser(): Map<string, Array<{ at: number; id: string; delivery: WebhookDelivery }>> {
    const byUser = new Map<string, Array<{ at: number; id: string; delivery: WebhookDelivery }>>();
    for (const request of this.accepted()) {
      for (const delivery of request.deliveries) {
        const list = byUser.get(delivery.user) ?? [];
        list.push({ at: request.at, id: request.id, delivery });
        byUser.set(delivery.user, list);
      }
    }
    return byUser;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    this.open++;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    if (this.gate) await this.gate;
    this.open--;
    const parsed = JSON.parse(raw.toString('utf8')) as {
      id: string;
      deliveries: WebhookDelivery[];
    };
    const request: ReceivedRequest = {
      id: parsed.id,
      idempotencyKey: String(req.headers['idempotency-key']),
      signatureValid: verifyWebhook(SECRET, req.headers['x-bubble-signature'] as string, raw),
      contentType: String(req.headers['content-type']),
      deliveries: parsed.deliveries,
      at: Date.now(),
      status: 0,
    };
    const answer = this.answer(request, this.requests.length);
    request.status = answer.status;
    this.requests.push(request);
    res.writeHead(answer.status, answer.headers ?? {});
    res.end();
  }
}

export function membersNamed(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}

/**
 * A test file's redis-server, the cleanups each test registers (run after it, last first), and
 * the parts of a test started on that server with their cleanup registered.
 */
export interface WebhookTestFile {
  readonly redis: RedisServerHandle;
  readonly cleanups: Array<() => Promise<void>>;
  /** A stack on the file's redis-server, closed after the test. */
  stack(sources?: WebhookSource[]): Promise<Stack>;
  /** A receiver on a free port, listening unless `started` is false, stopped after the test. */
  receiver(options?: { started?: boolean }): Promise<TestReceiver>;
  /** Delivery workers of `stack` to `url`, closed after the test. */
  workers(stack: Stack, url: string, options?: Partial<DeliveryWorkersOptions>): Promise<Workers>;
  /**
   * A stack and a receiver, with conversation `id` of `size` members named `${prefix}0`,
   * `${prefix}1`…; the first `online` of them online, the others (`offline`) not.
   */
  group(id: string, prefix: string, size: number, online: number): Promise<GroupOnStack>;
}

export interface GroupOnStack {
  stack: Stack;
  receiver: TestReceiver;
  offline: string[];
}

/** Starts one redis-server for the calling test file and runs each test's cleanups after it. */
export function webhookTestFile(): WebhookTestFile {
  const cleanups: Array<() => Promise<void>> = [];
  let server: RedisServerHandle | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const file: WebhookTestFile = {
    get redis(): RedisServerHandle {
      if (!server) throw new Error('the redis-server starts in beforeAll');
      return server;
    },
    cleanups,
    async stack(sources) {
      const stack = await startStack(file.redis.url, sources);
      cleanups.push(() => stack.close());
      return stack;
    },
    async receiver({ started = true } = {}) {
      const receiver = new TestReceiver(await freePort());
      cleanups.push(() => receiver.stop());
      return started ? receiver.start() : receiver;
    },
    async workers(stack, url, options) {
      const workers = await startWorkers(stack, url, options);
      cleanups.push(() => workers.close());
      return workers;
    },
    async group(id, prefix, size, online) {
      const stack = await file.stack();
      const receiver = await file.receiver();
      const members = membersNamed(prefix, size);
      await stack.service.replaceMembers(id, members);
      await Promise.all(
        members.slice(0, online).map((user) => stack.service.setPresence(user, true, 60_000)),
      );
      return { stack, receiver, offline: members.slice(online) };
    },
  };
  return file;
}

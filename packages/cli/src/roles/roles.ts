import { CoreMetrics, CoreNode } from '@bubble/core';
import { BadgeService } from '@bubble/badges';
import {
  GatewayMetrics,
  HttpGateway,
  GATEWAY_NODE_FLAGS,
  heartbeatFigures,
  pretouchYoungGeneration,
  tuneHeapForConnections,
} from '@bubble/gateway';
import {
  IngestConsumers,
  redisOfflineJobs,
  startDeliveryWorkers,
  startFeedDigest,
  type DeliveryWorkers,
} from '@bubble/events';
import { SchedulerNode, readClusterStatus, tickPeriodMs } from '@bubble/server';
import { RedisStore, RedisWebhookQueue, readIngestBacklog, type BubbleStore } from '@bubble/store';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config.js';
import { hasRedis } from '../store-factory.js';
import { checkRedisSettings } from '../redis-settings-check.js';
import type { StartSecrets } from '../secrets.js';
import { watchClock } from './clock-watch.js';
import {
  convertLegacyFollows,
  createLocks,
  createStore,
  nodeId,
  sourcesClient,
} from './runtime.js';
import { waitUntilReachable } from './wait-for-store.js';

export type Role = 'all' | 'server' | 'core' | 'gateway';

/** Keeps a node in the cluster's node list (heartbeats); the returned stop removes it. */
function announce(
  store: BubbleStore,
  node: { id: string; role: 'gateway'; url: string },
  leaseMs: number,
  logger: Logger,
  figures: () => object = () => ({}),
): () => Promise<void> {
  const startedAt = store.clock.now();
  // A missed heartbeat is retried by the next one; the node drops out of the list only when
  // the lease runs out without one.
  const beat = () =>
    store.coordination
      .heartbeat({ ...node, ...figures(), startedAt, seenAt: store.clock.now() }, leaseMs)
      .catch((err: unknown) => logger.warn({ err, node: node.id }, 'heartbeat failed'));
  void beat();
  const timer = setInterval(() => void beat(), Math.max(100, Math.floor(leaseMs / 3)));
  timer.unref();
  return async () => {
    clearInterval(timer);
    // Best effort: a node left in the list expires with its lease.
    await store.coordination
      .removeNode(node.id)
      .catch((err: unknown) =>
        logger.warn({ err, node: node.id }, 'could not leave the node list'),
      );
  };
}

export interface RunningRole {
  /** The public HTTP URL (gateway and all) or the operator URL (server, core). */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts one role (or all of them) in this process. Every role serves /healthz, /readyz and
 * /metrics on PORT, or on BUBBLE_INTERNAL_PORT when that is set, from the moment it listens:
 * while the store (or the lock quorum) cannot be reached it keeps trying with backoff, alive
 * (/healthz 200) but not ready (/readyz 503) until the role has started. `signal` ends that
 * wait (a shutdown before the store came).
 */
export async function startRole(
  role: Role,
  config: Config,
  start: StartSecrets,
  logger: Logger,
  signal?: AbortSignal,
): Promise<RunningRole> {
  const { secrets, host } = start;
  if (config.BUBBLE_WEBHOOK_URL !== undefined && !hasRedis(config)) {
    throw new ConfigError(
      'BUBBLE_WEBHOOK_URL needs Redis (REDIS_URL or REDIS_CLUSTER_NODES): offline deliveries are queued in Redis, so that a gateway that dies loses none; the in-memory engine does not support them',
    );
  }
  const store = createStore(config);
  // Offline delivery's queue (docs/api.md): the badges layer appends one job per write to it.
  const webhookQueue =
    config.BUBBLE_WEBHOOK_URL !== undefined && store instanceof RedisStore
      ? new RedisWebhookQueue(store.redis, store.keys)
      : undefined;
  const lockRuntime = role === 'core' || role === 'all' ? createLocks(config, store, logger) : null;
  const metrics = new GatewayMetrics();
  const sources = sourcesClient(config, metrics.registry, logger);
  // Every time a role computes is the store's (synced below, before anything is served).
  const service = new BadgeService(
    store,
    store.clock,
    {
      lookbackDays: config.BUBBLE_LOOKBACK_DAYS,
      followCap: config.BUBBLE_FOLLOW_CAP,
      topicCap: config.BUBBLE_TOPIC_CAP,
      displayCap: config.BUBBLE_DISPLAY_CAP,
      inactiveDays: config.BUBBLE_INACTIVE_DAYS,
      counterKinds: config.BUBBLE_COUNTER_KINDS,
    },
    {
      offlineJobs: webhookQueue && redisOfflineJobs(webhookQueue, config.BUBBLE_WEBHOOK_SOURCES),
      sources,
      sourcesTimeoutMs: config.BUBBLE_SOURCES_TIMEOUT_MS,
    },
  );
  const stops: Array<() => Promise<void>> = [];
  const internal = config.BUBBLE_INTERNAL_PORT !== undefined;
  const servesPublic = role === 'gateway' || role === 'all';
  const common = {
    service,
    logger,
    metrics,
    basePollSeconds: config.BUBBLE_POLL_INTERVAL_S,
    clusterStatus: async () => ({
      ...(await readClusterStatus(store)),
      // The ingest stream's backlog (docs/api.md); null where no stream is read.
      ingest:
        store instanceof RedisStore && config.BUBBLE_INGEST_STREAM
          ? {
              partitions: await readIngestBacklog(
                store.redis,
                store.keys,
                config.BUBBLE_INGEST_PARTITIONS,
              ),
            }
          : null,
      webhook: webhookQueue ? await webhookView(webhookQueue, store) : null,
    }),
    clusterReads: store.coordination,
  };
  const gateways: HttpGateway[] = [];
  let ingest: IngestConsumers | undefined;
  let webhook: DeliveryWorkers | undefined;
  const clockListeners = watchClock(logger, metrics);
  try {
    let url = '';
    let publicGateway: { gateway: HttpGateway; id: string } | undefined;
    if (servesPublic) {
      if (!secrets) throw new Error('the gateway needs BUBBLE_API_KEY and BUBBLE_JWT_SECRET');
      // A process that is only a gateway holds mostly connections (see heap-tuning); `bubble
      // all` also holds a core's users, whose heap these settings are not made for.
      if (role === 'gateway' && config.BUBBLE_GATEWAY_HEAP_TUNING) tuneHeapForConnections();
      const young = pretouchYoungGeneration();
      if (young.sized) logger.info(young, 'young generation pretouched');
      else {
        logger.info(
          { ...young, flags: GATEWAY_NODE_FLAGS.join(' ') },
          "node was started without the gateway's young generation: pushes cost it more CPU (docs/deployment.md)",
        );
      }
      const gatewayId = nodeId('gateway');
      const gateway = new HttpGateway({
        ...common,
        auth: secrets.auth,
        serves: internal ? ['platform', 'client'] : ['operator', 'platform', 'client'],
        live: {
          gatewayId,
          presenceTtlMs: config.BUBBLE_PRESENCE_TTL_MS,
          pubsubCheckMs: config.BUBBLE_PUBSUB_CHECK_MS,
          maxPayload: config.BUBBLE_WS_MAX_PAYLOAD,
          heartbeatMs: config.BUBBLE_WS_PING_INTERVAL_MS,
          pongTimeoutMs: config.BUBBLE_WS_PONG_TIMEOUT_MS,
          allowedOrigins: config.BUBBLE_ALLOWED_ORIGINS,
          connectLimit: {
            perSecond: config.BUBBLE_WS_CONNECT_RATE,
            burst: config.BUBBLE_WS_CONNECT_BURST,
          },
          trustedProxies: config.BUBBLE_TRUSTED_PROXIES,
          drainRate: config.BUBBLE_WS_DRAIN_RATE,
          drainMaxMs: config.BUBBLE_WS_DRAIN_MAX_MS,
        },
        clientLimits: {
          perUser: {
            perSecond: config.BUBBLE_CLIENT_USER_RATE,
            burst: config.BUBBLE_CLIENT_USER_BURST,
          },
          perAddress: {
            perSecond: config.BUBBLE_CLIENT_ADDRESS_RATE,
            burst: config.BUBBLE_CLIENT_ADDRESS_BURST,
          },
          maxTracked: config.BUBBLE_CLIENT_LIMIT_TRACKED,
        },
        trustedProxies: config.BUBBLE_TRUSTED_PROXIES,
        // Minting tokens for anyone only with a generated (never a configured) JWT secret.
        demo: { devTokens: secrets.generated && config.BUBBLE_JWT_SECRET === undefined },
      });
      gateways.push(gateway);
      publicGateway = { gateway, id: gatewayId };
      const address = await gateway.listen(config.PORT, host, { beforeStart: true });
      url = `http://localhost:${address.port}`;
    }
    if (!servesPublic || internal) {
      // A gateway's own operator port also serves the dashboard (which reads the cluster there).
      const auth = servesPublic ? secrets?.auth : undefined;
      const operator = new HttpGateway({ ...common, auth, serves: ['operator'] });
      gateways.push(operator);
      const port = internal ? config.BUBBLE_INTERNAL_PORT! : config.PORT;
      const address = await operator.listen(port, host, { beforeStart: true });
      if (!servesPublic) url = `http://localhost:${address.port}`;
    }
    await waitUntilReachable(
      async () => {
        await store.ping();
        // The first sample of the store's clock: retried like the rest if it fails.
        await store.syncClock(clockListeners);
        await lockRuntime?.reachable();
      },
      {
        backoff: { initialMs: 500, maxMs: config.BUBBLE_START_RETRY_MAX_MS },
        logger,
        signal,
      },
    );
    // Advice only: it never holds up or fails the start (and /readyz is about reachability).
    if (store instanceof RedisStore) void checkRedisSettings(store.redis, logger);
    for (const client of lockRuntime?.quorumClients ?? [])
      void checkRedisSettings(client, logger, 'lock quorum');
    if (publicGateway) {
      const { gateway, id } = publicGateway;
      await gateway.start();
      stops.push(
        announce(
          store,
          { id, role: 'gateway', url: config.BUBBLE_ADVERTISE_URL ?? url },
          config.BUBBLE_LEASE_MS,
          logger,
          () => heartbeatFigures(gateway),
        ),
      );
      if (store instanceof RedisStore && config.BUBBLE_INGEST_STREAM) {
        ingest = new IngestConsumers({
          redis: store.redis,
          keys: store.keys,
          service,
          consumer: id,
          partitions: config.BUBBLE_INGEST_PARTITIONS,
          claimMs: config.BUBBLE_INGEST_CLAIM_MS,
          maxDeliveries: config.BUBBLE_INGEST_MAX_DELIVERIES,
          blockMs: config.BUBBLE_INGEST_BLOCK_MS,
          count: config.BUBBLE_INGEST_READ_COUNT,
          logger,
          registry: metrics.registry,
        });
        ingest.start();
      }
      if (webhookQueue && store instanceof RedisStore) {
        webhook = await startDeliveryWorkers(store.redis, store.keys, service, {
          url: config.BUBBLE_WEBHOOK_URL!,
          secret: config.BUBBLE_WEBHOOK_SECRET!,
          consumer: id,
          timeoutMs: config.BUBBLE_WEBHOOK_TIMEOUT_MS,
          maxAttempts: config.BUBBLE_WEBHOOK_MAX_ATTEMPTS,
          minIntervalMs: config.BUBBLE_WEBHOOK_MIN_INTERVAL_MS,
          retryBaseMs: config.BUBBLE_WEBHOOK_RETRY_BASE_MS,
          retryMaxMs: config.BUBBLE_WEBHOOK_RETRY_MAX_MS,
          queueMax: config.BUBBLE_WEBHOOK_QUEUE_MAX,
          concurrency: config.BUBBLE_WEBHOOK_CONCURRENCY,
          // The jobs stream is claimed from a dead gateway as the ingest stream is.
          claimMs: config.BUBBLE_INGEST_CLAIM_MS,
          logger,
          registry: metrics.registry,
        });
        if (config.BUBBLE_WEBHOOK_SOURCES.includes('feed')) {
          // The feed on phones (docs/api.md): a share of the digest's pass in every gateway.
          const digest = await startFeedDigest(store, {
            intervalMs: config.BUBBLE_DIGEST_INTERVAL_MS,
            days: config.BUBBLE_DIGEST_DAYS,
            rate: config.BUBBLE_DIGEST_RATE,
            webhookMinIntervalMs: config.BUBBLE_WEBHOOK_MIN_INTERVAL_MS,
            queueMax: config.BUBBLE_WEBHOOK_QUEUE_MAX,
            logger,
            registry: metrics.registry,
          });
          stops.unshift(() => digest.close());
        }
      }
    }
    // `url` reaches this process from its own host; the node list shows what others reach.
    const advertisedUrl = config.BUBBLE_ADVERTISE_URL ?? url;
    if (lockRuntime) {
      const core = new CoreNode({
        id: nodeId('core'),
        store,
        locks: lockRuntime.locks,
        clock: store.clock,
        logger,
        metrics: new CoreMetrics(metrics.registry),
        lookbackDays: config.BUBBLE_LOOKBACK_DAYS,
        counters: { kinds: config.BUBBLE_COUNTER_KINDS, inactiveDays: config.BUBBLE_INACTIVE_DAYS },
        leaseMs: config.BUBBLE_LEASE_MS,
        tickMs: tickPeriodMs(config.BUBBLE_TICK),
        reconcilePerSweep: Math.ceil(
          (config.BUBBLE_RECONCILE_RATE * tickPeriodMs(config.BUBBLE_TICK)) / 1000,
        ),
        url: advertisedUrl,
        ...(sources && { sources }),
        sourcesTimeoutMs: config.BUBBLE_SOURCES_TIMEOUT_MS,
        caps: { follows: config.BUBBLE_FOLLOW_CAP, topics: config.BUBBLE_TOPIC_CAP },
      });
      await core.start();
      stops.unshift(() => core.close());
    }
    if (role === 'server' || role === 'all') {
      if (store instanceof RedisStore) stops.unshift(convertLegacyFollows(store, logger));
      const scheduler = new SchedulerNode({
        id: nodeId('server'),
        store,
        logger,
        leaseMs: config.BUBBLE_LEASE_MS,
        tick: config.BUBBLE_TICK,
        url: advertisedUrl,
        inactiveJob: {
          schedule: config.BUBBLE_INACTIVE_SCHEDULE,
          run: async () =>
            (await service.dropInactiveUsers(config.BUBBLE_INACTIVE_BATCH)).length +
            (await service.expireOfflineBadges(config.BUBBLE_INACTIVE_BATCH)),
        },
      });
      await scheduler.start();
      metrics.trackScheduler(scheduler);
      stops.push(() => scheduler.close());
    }
    // Ready from here: every route answers and /readyz asks the store.
    for (const gateway of gateways) await gateway.start();
    logger.info(
      { role, url, host, engine: store.engine, development: start.development },
      `bubble ${role} is listening`,
    );
    return {
      url,
      async close() {
        // Nothing is read once closing began; the batch in hand is applied and acknowledged.
        await ingest?.close();
        // A batch in flight ends its request; what is left is resumed by another gateway.
        await webhook?.close();
        await Promise.all(gateways.map((g) => g.close()));
        for (const stop of stops) await stop();
        await sources?.close();
        await lockRuntime?.close();
        await store.close();
      },
    };
  } catch (err) {
    // The start failed with `err`, which is what the caller must see; what else fails while
    // undoing it is logged.
    const undoFailed = (cause: unknown) =>
      logger.warn({ err: cause }, 'could not undo part of a failed start');
    await ingest?.close().catch(undoFailed);
    await webhook?.close().catch(undoFailed);
    await Promise.allSettled(gateways.map((g) => g.close()));
    for (const stop of stops) await stop().catch(undoFailed);
    await sources?.close().catch(undoFailed);
    await lockRuntime?.close().catch(undoFailed);
    await store.close().catch(undoFailed);
    throw err;
  }
}

/** GET /v1/cluster's view of offline delivery. */
async function webhookView(queue: RedisWebhookQueue, store: BubbleStore) {
  const { queued, oldestQueuedMs, retrying, deadLetters } = await queue.stats(store.clock.now());
  return { queued, oldestQueuedMs, retrying, deadLetters };
}

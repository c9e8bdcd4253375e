import { BadgeService } from '@bubble/core';
import { HttpGateway, GatewayMetrics } from '@bubble/gateway';
import { systemClock } from '@bubble/protocol';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { ResolvedSecrets } from '../secrets.js';
import { createStore } from '../store-factory.js';

export interface RunningRole {
  url: string;
  close(): Promise<void>;
}

/** Every role in one process: the store, the badge rules and the HTTP gateway. */
export async function startAll(
  config: Config,
  secrets: ResolvedSecrets,
  logger: Logger,
): Promise<RunningRole> {
  const store = createStore(config);
  const service = new BadgeService(store, systemClock, {
    lookbackDays: config.BUBBLE_LOOKBACK_DAYS,
    followCap: config.BUBBLE_FOLLOW_CAP,
    displayCap: config.BUBBLE_DISPLAY_CAP,
  });
  const metrics = new GatewayMetrics();
  const internal = config.BUBBLE_INTERNAL_PORT !== undefined;
  const common = {
    service,
    auth: secrets.auth,
    logger,
    metrics,
    basePollSeconds: config.BUBBLE_POLL_INTERVAL_S,
  };
  const gateway = new HttpGateway({
    ...common,
    serves: internal ? ['platform', 'client'] : ['operator', 'platform', 'client'],
  });
  const operator = internal ? new HttpGateway({ ...common, serves: ['operator'] }) : undefined;
  try {
    await store.ping();
    const address = await gateway.listen(config.PORT);
    if (operator) await operator.listen(config.BUBBLE_INTERNAL_PORT!);
    const url = `http://localhost:${address.port}`;
    logger.info(
      { url, engine: store.engine, internalPort: config.BUBBLE_INTERNAL_PORT },
      'bubble all is listening',
    );
    return {
      url,
      async close() {
        await Promise.all([gateway.close(), operator?.close()]);
        await store.close();
      },
    };
  } catch (err) {
    await Promise.allSettled([gateway.close(), operator?.close(), store.close()]);
    throw err;
  }
}

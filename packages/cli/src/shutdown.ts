import type { Logger } from 'pino';

import type { Config } from './config.js';
import type { Role } from './roles/roles.js';

/** The shutdown's hard deadline: 10 s, and a gateway's paced drain on top (BUBBLE_WS_DRAIN_MAX_MS). */
export function shutdownDeadlineMs(
  role: Role,
  config: Pick<Config, 'BUBBLE_WS_DRAIN_MAX_MS'>,
): number {
  return 10_000 + (role === 'gateway' || role === 'all' ? config.BUBBLE_WS_DRAIN_MAX_MS : 0);
}

/**
 * SIGTERM / SIGINT run `close` once under a hard deadline, then exit. A second signal while
 * closing is ignored; the deadline still ends the process.
 */
export function exitOnSignals(
  close: () => Promise<void>,
  logger: Logger,
  deadlineMs = 10_000,
): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    const deadline = setTimeout(() => {
      logger.error({ deadlineMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, deadlineMs);
    deadline.unref();
    close().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

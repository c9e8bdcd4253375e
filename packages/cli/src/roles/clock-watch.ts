import type { GatewayMetrics } from '@bubble/gateway';
import type { ClockListeners } from '@bubble/store';
import type { Logger } from 'pino';

/** Beyond this, the host's clock is worth an operator's look (the roles do not depend on it). */
const CLOCK_OFFSET_WARN_MS = 1_000;

/**
 * What the store clock's samples feed: bubble_clock_offset_seconds, and a warning each time
 * this host's clock moves beyond CLOCK_OFFSET_WARN_MS of the store's (an info when it is back).
 */
export function watchClock(logger: Logger, metrics: GatewayMetrics): ClockListeners {
  let beyond = false;
  let failing = false;
  return {
    onSample({ offsetMs, roundTripMs }) {
      failing = false;
      metrics.clockOffset.set(offsetMs / 1000);
      const now = Math.abs(offsetMs) > CLOCK_OFFSET_WARN_MS;
      if (now && !beyond) {
        logger.warn(
          { offsetMs, roundTripMs },
          "this host's clock is off the store's; bubble keeps time by the store's clock",
        );
      } else if (!now && beyond) {
        logger.info({ offsetMs, roundTripMs }, "this host's clock agrees with the store's again");
      }
      beyond = now;
    },
    onError(err) {
      if (!failing)
        logger.warn({ err }, "could not read the store's clock; running on the last sample");
      failing = true;
    },
  };
}

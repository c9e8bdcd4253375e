import { byId, setText } from './dom.js';
import { fmt, ms } from './format.js';
import { quantile, total, type Samples } from './prometheus-text.js';

type CounterName = 'requests' | 'posts' | 'written' | 'pushes';
let previous: { at: number; counters: Record<CounterName, number | null> } | null = null;

/** The cards of this process, from its /metrics (null: this port serves none). */
export function renderProcess(samples: Samples | null, now: number): void {
  byId('metrics-missing').hidden = samples !== null;
  byId('gateway-cards').hidden = samples === null;
  if (!samples) {
    previous = null;
    return;
  }
  const counters: Record<CounterName, number | null> = {
    requests: total(samples, 'bubble_http_requests_total'),
    posts: total(samples, 'bubble_posts_ingested_total'),
    written: total(samples, 'bubble_core_badges_written_total'),
    pushes: total(samples, 'bubble_gateway_pushes_total'),
  };
  const rate = (name: CounterName): number | null => {
    const now_ = counters[name];
    const then = previous?.counters[name];
    if (!previous || now_ === null || then === null || then === undefined) return null;
    const seconds = (now - previous.at) / 1000;
    return seconds > 0 ? Math.max(0, now_ - then) / seconds : null;
  };
  setText('ws-connections', fmt(total(samples, 'bubble_ws_connections')));
  setText('users-held', fmt(total(samples, 'bubble_gateway_users_held')));
  setText('requests-rate', fmt(rate('requests'), 1));
  setText('posts-rate', fmt(rate('posts'), 1));
  setText('written-rate', fmt(rate('written'), 1));
  setText('pushes-rate', fmt(rate('pushes'), 1));
  setText('push-backlog', fmt(total(samples, 'bubble_gateway_push_backlog')));
  const wait99 = quantile(samples, 'bubble_gateway_push_wait_seconds', 0.99);
  setText('push-wait', wait99 === null ? '–' : ms(wait99 * 1000));
  const p50 = quantile(samples, 'bubble_core_sweep_seconds', 0.5);
  const p99 = quantile(samples, 'bubble_core_sweep_seconds', 0.99);
  setText(
    'sweep-quantiles',
    p50 === null || p99 === null ? '–' : `${ms(p50 * 1000)} / ${ms(p99 * 1000)}`,
  );
  const rss = total(samples, 'bubble_process_resident_memory_bytes');
  setText('rss', rss === null ? '–' : `${(rss / 1048576).toFixed(0)} MiB`);
  previous = { at: now, counters };
}

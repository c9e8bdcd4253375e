import { readKey, writeKey } from './api-key.js';
import { loadCluster, loadHistory, loadMetrics, Unauthorized } from './api.js';
import { renderCharts } from './charts-view.js';
import { renderCluster } from './cluster-view.js';
import { byId } from './dom.js';
import { HistoryStore } from './history-store.js';
import { renderProcess } from './process-view.js';

const REFRESH_MS = 3000;
const history = new HistoryStore();

function showKeyForm(message: string): void {
  byId('key-section').hidden = false;
  byId('cluster').hidden = true;
  byId('forget-key').hidden = true;
  byId('key-error').textContent = message;
  history.clear();
}

function showCluster(): void {
  byId('key-section').hidden = true;
  byId('cluster').hidden = false;
  byId('forget-key').hidden = false;
}

function setStatus(text: string, state: 'ok' | 'error'): void {
  const status = byId('status');
  status.textContent = text;
  status.dataset.state = state;
}

const reason = (result: PromiseRejectedResult) =>
  result.reason instanceof Error ? result.reason.message : String(result.reason);

let timer: ReturnType<typeof setTimeout> | undefined;
let running = false;

async function refresh(): Promise<void> {
  if (running) return;
  running = true;
  clearTimeout(timer);
  const problems: string[] = [];
  try {
    const key = readKey();
    const [cluster, metrics, samples] = await Promise.allSettled([
      key ? loadCluster(key) : Promise.resolve(null),
      loadMetrics(),
      key ? loadHistory(key, history.since) : Promise.resolve(null),
    ]);
    const now = Date.now();
    if (cluster.status === 'fulfilled' && cluster.value) {
      renderCluster(cluster.value, now);
      showCluster();
    } else if (cluster.status === 'rejected' && cluster.reason instanceof Unauthorized) {
      writeKey('');
      showKeyForm(cluster.reason.message);
    } else if (cluster.status === 'rejected') {
      problems.push(`cluster: ${reason(cluster)}`);
    } else {
      showKeyForm('');
    }
    if (samples.status === 'fulfilled' && samples.value) {
      history.merge(samples.value);
      if (!byId('cluster').hidden) renderCharts(history.samples, history.intervalMs);
    } else if (samples.status === 'rejected' && !(samples.reason instanceof Unauthorized)) {
      problems.push(`history: ${reason(samples)}`);
    }
    if (metrics.status === 'fulfilled') renderProcess(metrics.value, now);
    else problems.push(`metrics: ${reason(metrics)}`);
    setStatus(
      problems.length ? problems.join(' · ') : `updated ${new Date(now).toLocaleTimeString()}`,
      problems.length ? 'error' : 'ok',
    );
  } finally {
    running = false;
    schedule();
  }
}

function schedule(): void {
  clearTimeout(timer);
  timer = setTimeout(() => {
    if (document.hidden) schedule();
    else void refresh();
  }, REFRESH_MS);
}

// Charts are drawn to their figure's width: redraw when it changes.
let redrawQueued = false;
new ResizeObserver(() => {
  if (redrawQueued || byId('cluster').hidden) return;
  redrawQueued = true;
  requestAnimationFrame(() => {
    redrawQueued = false;
    renderCharts(history.samples, history.intervalMs);
  });
}).observe(byId('charts'));

byId('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const field = byId<HTMLInputElement>('api-key');
  const key = field.value.trim();
  field.value = '';
  if (!key || key.length > 1024) {
    showKeyForm('Paste the platform API key (BUBBLE_API_KEY).');
    return;
  }
  writeKey(key);
  void refresh();
});
byId('forget-key').addEventListener('click', () => {
  writeKey('');
  showKeyForm('');
  byId('api-key').focus();
});
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) void refresh();
});
void refresh();

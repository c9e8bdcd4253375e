import { createHash } from 'node:crypto';

/**
 * The operator dashboard: one HTML document, style and script inline, loading nothing. It reads
 * GET /v1/cluster with the platform API key the person pastes (kept in sessionStorage, sent only
 * as the X-Api-Key header) and GET /metrics of the process that serves it, every few seconds.
 * The CSP allows exactly the two inline blocks, by hash, and connections back to this origin.
 */

const STYLE = `
:root {
  color-scheme: light;
  --ink: #1d2330;
  --muted: #5d6677;
  --line: #dde2ea;
  --card: #ffffff;
  --bg: #f3f5f9;
  --red: #e5383b;
  --accent: #2957d6;
  --bad: #b3261e;
  font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
  color: var(--ink);
  background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; padding: 1.5rem 1rem 3rem; }
main, #cluster { display: grid; gap: 1rem; }
main { max-width: 72rem; margin: 0 auto; }
header { display: flex; align-items: baseline; flex-wrap: wrap; gap: 0.75rem; }
h1 { font-size: 1.5rem; margin: 0; letter-spacing: -0.02em; }
h1 .dot { color: var(--red); }
header .status { margin: 0 0 0 auto; color: var(--muted); font-size: 0.9rem; }
header .status[data-state='error'] { color: var(--bad); }
h2 { font-size: 1rem; margin: 0 0 0.8rem; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 1.1rem 1.25rem; box-shadow: 0 1px 3px rgb(0 0 0 / 0.05); min-width: 0; }
.columns { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 1rem; align-items: start; }
@media (max-width: 56rem) { .columns { grid-template-columns: minmax(0, 1fr); } }
label { display: block; font-weight: 600; margin: 0 0 0.3rem; }
.hint { color: var(--muted); font-size: 0.85rem; margin: 0.4rem 0 0; }
.row { display: flex; gap: 0.6rem; flex-wrap: wrap; }
input { flex: 1; min-width: 14rem; font: inherit; padding: 0.5rem 0.7rem; border: 1px solid #b9c1ce; border-radius: 8px; }
input:focus-visible, button:focus-visible { outline: 3px solid rgb(41 87 214 / 0.45); outline-offset: 2px; }
button { font: inherit; font-weight: 600; padding: 0.5rem 1rem; border-radius: 8px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: transparent; color: var(--accent); padding: 0.25rem 0.7rem; font-size: 0.9rem; }
.error { color: var(--bad); margin: 0.6rem 0 0; }
.error:empty { display: none; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(10.5rem, 1fr)); gap: 0.6rem; margin: 0; }
.cards div { border: 1px solid var(--line); border-radius: 10px; padding: 0.55rem 0.7rem; min-width: 0; }
.cards dt { font-size: 0.8rem; color: var(--muted); }
.cards dd { margin: 0.1rem 0 0; font-size: 1.25rem; font-weight: 700; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.cards dd.id { font-size: 0.9rem; font-weight: 600; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.grid { display: grid; grid-template-columns: repeat(var(--cols, 10), minmax(0, 1fr)); gap: 3px; max-width: 34rem; }
.cell { aspect-ratio: 1; border-radius: 4px; background: var(--c, #e4e8ee); color: #1d2330; font-size: 0.7rem; font-variant-numeric: tabular-nums; display: flex; align-items: center; justify-content: center; overflow: hidden; min-width: 0; }
.cell[data-owned='false'] { background: repeating-linear-gradient(45deg, #e4e8ee 0 4px, #f6f7fa 4px 8px); color: var(--muted); }
.cell[data-online='0'] { color: rgb(29 35 48 / 0.45); }
.legend { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.3rem; }
.legend li { display: flex; align-items: center; gap: 0.5rem; font-size: 0.88rem; min-width: 0; }
.legend .swatch { flex: none; width: 0.9rem; height: 0.9rem; border-radius: 3px; background: var(--c, #e4e8ee); }
.legend .swatch[data-owned='false'] { background: repeating-linear-gradient(45deg, #e4e8ee 0 3px, #f6f7fa 3px 6px); }
.legend .who { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
.legend .n { margin-left: auto; color: var(--muted); white-space: nowrap; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 0.88rem; }
th, td { text-align: left; padding: 0.35rem 0.5rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: 0.75rem; text-transform: uppercase; letter-spacing: 0.05em; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
td.empty { color: var(--muted); white-space: normal; }
.tag { display: inline-block; margin-left: 0.35rem; padding: 0 0.4rem; border-radius: 1rem; background: #fde7e7; color: #9b1c1f; font-size: 0.72rem; font-weight: 700; }
.muted { color: var(--muted); }
[hidden] { display: none !important; }
`;

const SCRIPT = `
const KEY_NAME = 'bubble.dashboard.apiKey';
const REFRESH_MS = 3000;
const MAX_NUMBERED_POOLS = 400;
const $ = (id) => document.getElementById(id);

// The key lives in sessionStorage (this tab only, gone when it closes); if storage is refused,
// in this variable only.
let memoryKey = '';
function readKey() {
  try {
    return sessionStorage.getItem(KEY_NAME) || '';
  } catch {
    return memoryKey;
  }
}
function writeKey(key) {
  memoryKey = key;
  try {
    if (key) sessionStorage.setItem(KEY_NAME, key);
    else sessionStorage.removeItem(KEY_NAME);
  } catch {
    // storage refused: the variable holds it
  }
}

class Unauthorized extends Error {}

async function loadCluster(key) {
  const res = await fetch('/v1/cluster', {
    headers: { 'x-api-key': key, accept: 'application/json' },
    cache: 'no-store',
    credentials: 'omit',
    redirect: 'error',
  });
  if (res.status === 401) throw new Unauthorized('The gateway refused this API key.');
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error((body && body.error && body.error.message) || 'HTTP ' + res.status);
  if (!body || !Array.isArray(body.pools) || !Array.isArray(body.nodes) || !Array.isArray(body.sweeps)) {
    throw new Error('GET /v1/cluster answered something unexpected');
  }
  return body;
}

async function loadMetrics() {
  const res = await fetch('/metrics', { cache: 'no-store', credentials: 'omit', redirect: 'error' });
  if (!res.ok) return null;
  return parseMetrics(await res.text());
}

/** Prometheus text format: name → [{ labels, value }]. */
function parseMetrics(text) {
  const samples = new Map();
  for (const line of text.split('\\n')) {
    if (line === '' || line[0] === '#') continue;
    const m = /^([A-Za-z_:][\\w:]*)(?:\\{(.*)\\})?\\s+(\\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const part of (m[2] || '').matchAll(/(\\w+)="((?:[^"\\\\]|\\\\.)*)"/g)) labels[part[1]] = part[2];
    const value = Number(m[3]);
    if (!Number.isFinite(value) && m[3] !== '+Inf') continue;
    if (!samples.has(m[1])) samples.set(m[1], []);
    samples.get(m[1]).push({ labels, value });
  }
  return samples;
}

function total(samples, name, keep) {
  let sum = 0;
  let seen = false;
  for (const s of samples.get(name) || []) {
    if (keep && !keep(s.labels)) continue;
    sum += s.value;
    seen = true;
  }
  return seen ? sum : null;
}

/** A quantile estimated from a histogram's cumulative buckets (linear within a bucket). */
function quantile(samples, name, q) {
  const buckets = (samples.get(name + '_bucket') || [])
    .map((s) => ({ le: s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), n: s.value }))
    .sort((a, b) => a.le - b.le);
  const count = buckets.length ? buckets[buckets.length - 1].n : 0;
  if (!count) return null;
  const rank = q * count;
  let lowLe = 0;
  let lowN = 0;
  for (const b of buckets) {
    if (b.n >= rank) {
      if (b.le === Infinity) return lowLe;
      return lowLe + ((b.le - lowLe) * (rank - lowN)) / Math.max(b.n - lowN, 1e-9);
    }
    lowLe = b.le;
    lowN = b.n;
  }
  return null;
}

const number = new Intl.NumberFormat();
function fmt(n, digits) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return digits === undefined ? number.format(n) : n.toFixed(digits);
}
function ms(n) {
  if (n === null || !Number.isFinite(n)) return '–';
  return n < 10 ? n.toFixed(2) + ' ms' : n < 1000 ? n.toFixed(0) + ' ms' : (n / 1000).toFixed(2) + ' s';
}
function span(msValue) {
  const s = Math.max(0, Math.round(msValue / 1000));
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
}
function ago(at, now) {
  const d = now - at;
  return d < 10000 ? (Math.max(0, d) / 1000).toFixed(1) + ' s ago' : span(d) + ' ago';
}

/** A stable colour per owner id (FNV-1a → hue). */
function colour(id) {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return 'hsl(' + ((h >>> 0) % 360) + ' 70% 74%)';
}

function cell(tag, text, className) {
  const el = document.createElement(tag);
  el.textContent = text;
  if (className) el.className = className;
  return el;
}

function emptyRow(body, columns, text) {
  const tr = document.createElement('tr');
  const td = cell('td', text, 'empty');
  td.colSpan = columns;
  tr.append(td);
  body.replaceChildren(tr);
}

function renderCluster(status, now) {
  const owners = new Map();
  for (const p of status.pools) {
    const key = p.owner === null || p.owner === undefined ? '' : String(p.owner);
    const entry = owners.get(key) || { pools: 0, online: 0 };
    entry.pools++;
    entry.online += Number(p.online) || 0;
    owners.set(key, entry);
  }
  const owned = status.pools.length - ((owners.get('') || {}).pools || 0);
  $('leader').textContent = status.leader || 'none';
  $('generation').textContent = fmt(status.generation);
  $('online').textContent = fmt(status.online);
  $('pools-owned').textContent = fmt(owned) + ' / ' + fmt(status.pools.length);
  $('node-count').textContent = fmt(status.nodes.length);

  // Pools: one cell per pool, coloured by owner, reused between refreshes.
  const grid = $('pools');
  const cols = Math.max(1, Math.min(100, Math.ceil(Math.sqrt(status.pools.length))));
  grid.style.setProperty('--cols', String(cols));
  grid.setAttribute('aria-label', status.pools.length + ' pools, ' + owned + ' owned, coloured by owner');
  while (grid.children.length > status.pools.length) grid.lastChild.remove();
  while (grid.children.length < status.pools.length) grid.append(cell('div', '', 'cell'));
  status.pools.forEach((p, i) => {
    const el = grid.children[i];
    const ownedBy = p.owner === null || p.owner === undefined ? '' : String(p.owner);
    el.dataset.owned = String(ownedBy !== '');
    el.dataset.online = String(p.online);
    if (ownedBy) el.style.setProperty('--c', colour(ownedBy));
    else el.style.removeProperty('--c');
    el.textContent = status.pools.length <= MAX_NUMBERED_POOLS ? String(p.online) : '';
    el.title = 'pool ' + p.pool + ' · ' + (ownedBy || 'no owner') + ' · ' + p.online + ' online';
  });

  const legend = $('owners');
  legend.replaceChildren();
  const sorted = [...owners.entries()].sort((a, b) => (a[0] === '' ? 1 : b[0] === '' ? -1 : a[0] < b[0] ? -1 : 1));
  for (const [id, entry] of sorted) {
    const li = document.createElement('li');
    const swatch = cell('span', '', 'swatch');
    swatch.dataset.owned = String(id !== '');
    if (id) swatch.style.setProperty('--c', colour(id));
    li.append(
      swatch,
      cell('span', id || 'no owner', 'who'),
      cell('span', entry.pools + (entry.pools === 1 ? ' pool · ' : ' pools · ') + fmt(entry.online) + ' online', 'n'),
    );
    legend.append(li);
  }

  const nodes = $('nodes');
  if (status.nodes.length === 0) emptyRow(nodes, 6, 'no live nodes');
  else {
    nodes.replaceChildren();
    const byRole = { server: 0, core: 1, gateway: 2, all: 3 };
    const list = [...status.nodes].sort((a, b) => (byRole[a.role] ?? 9) - (byRole[b.role] ?? 9) || (a.id < b.id ? -1 : 1));
    for (const n of list) {
      const tr = document.createElement('tr');
      const role = cell('td', String(n.role));
      if (n.id === status.leader) role.append(cell('span', 'leader', 'tag'));
      tr.append(
        role,
        cell('td', String(n.id), 'id'),
        cell('td', n.url ? String(n.url) : '–'),
        cell('td', fmt((owners.get(String(n.id)) || { pools: 0 }).pools), 'num'),
        cell('td', span(now - n.startedAt), 'num'),
        cell('td', ago(n.seenAt, now), 'num'),
      );
      nodes.append(tr);
    }
  }

  const sweeps = $('sweeps');
  if (status.sweeps.length === 0) emptyRow(sweeps, 9, 'no sweep reported yet');
  else {
    sweeps.replaceChildren();
    const list = [...status.sweeps].sort((a, b) => (a.node < b.node ? -1 : 1));
    for (const s of list) {
      const tr = document.createElement('tr');
      tr.append(
        cell('td', String(s.node), 'id'),
        cell('td', ago(s.at, now), 'num'),
        cell('td', ms(s.durationMs), 'num'),
        cell('td', fmt(s.pools), 'num'),
        cell('td', fmt(s.users), 'num'),
        cell('td', fmt(s.changed), 'num'),
        cell('td', fmt(s.redisCommands), 'num'),
        cell('td', fmt(s.staleWritesRejected), 'num'),
        cell('td', fmt(s.driftRepaired), 'num'),
      );
      sweeps.append(tr);
    }
  }
  const longest = status.sweeps.reduce((m, s) => Math.max(m, Number(s.durationMs) || 0), 0);
  $('sweep-longest').textContent = status.sweeps.length ? ms(longest) : '–';
}

let previous = null;
function renderMetrics(samples, now) {
  $('metrics-missing').hidden = samples !== null;
  $('gateway-cards').hidden = samples === null;
  if (!samples) {
    previous = null;
    return;
  }
  const counters = {
    requests: total(samples, 'bubble_http_requests_total'),
    posts: total(samples, 'bubble_posts_ingested_total'),
    written: total(samples, 'bubble_core_badges_written_total'),
    pushes: total(samples, 'bubble_gateway_pushes_total'),
  };
  const rate = (name) => {
    if (!previous || counters[name] === null || previous.counters[name] === null) return null;
    const seconds = (now - previous.at) / 1000;
    return seconds > 0 ? Math.max(0, counters[name] - previous.counters[name]) / seconds : null;
  };
  $('ws-connections').textContent = fmt(total(samples, 'bubble_ws_connections'));
  $('users-held').textContent = fmt(total(samples, 'bubble_gateway_users_held'));
  $('requests-rate').textContent = fmt(rate('requests'), 1);
  $('posts-rate').textContent = fmt(rate('posts'), 1);
  $('written-rate').textContent = fmt(rate('written'), 1);
  $('pushes-rate').textContent = fmt(rate('pushes'), 1);
  $('push-backlog').textContent = fmt(total(samples, 'bubble_gateway_push_backlog'));
  const wait99 = quantile(samples, 'bubble_gateway_push_wait_seconds', 0.99);
  $('push-wait').textContent = wait99 === null ? '–' : ms(wait99 * 1000);
  const p50 = quantile(samples, 'bubble_core_sweep_seconds', 0.5);
  const p99 = quantile(samples, 'bubble_core_sweep_seconds', 0.99);
  $('sweep-quantiles').textContent = p50 === null ? '–' : ms(p50 * 1000) + ' / ' + ms(p99 * 1000);
  const rss = total(samples, 'bubble_process_resident_memory_bytes');
  $('rss').textContent = rss === null ? '–' : (rss / 1048576).toFixed(0) + ' MiB';
  previous = { at: now, counters };
}

function showKeyForm(message) {
  $('key-section').hidden = false;
  $('cluster').hidden = true;
  $('forget-key').hidden = true;
  $('key-error').textContent = message || '';
}

function showCluster() {
  $('key-section').hidden = true;
  $('cluster').hidden = false;
  $('forget-key').hidden = false;
}

function setStatus(text, state) {
  $('status').textContent = text;
  $('status').dataset.state = state;
}

let timer;
let running = false;
async function refresh() {
  if (running) return;
  running = true;
  clearTimeout(timer);
  const problems = [];
  try {
    const key = readKey();
    const [cluster, metrics] = await Promise.allSettled([
      key ? loadCluster(key) : Promise.resolve(null),
      loadMetrics(),
    ]);
    const now = Date.now();
    if (cluster.status === 'fulfilled' && cluster.value) {
      renderCluster(cluster.value, now);
      showCluster();
    } else if (cluster.status === 'rejected' && cluster.reason instanceof Unauthorized) {
      writeKey('');
      showKeyForm(cluster.reason.message);
    } else if (cluster.status === 'rejected') {
      problems.push('cluster: ' + cluster.reason.message);
    } else {
      showKeyForm('');
    }
    if (metrics.status === 'fulfilled') renderMetrics(metrics.value, now);
    else problems.push('metrics: ' + metrics.reason.message);
    setStatus(
      problems.length ? problems.join(' · ') : 'updated ' + new Date(now).toLocaleTimeString(),
      problems.length ? 'error' : 'ok',
    );
  } finally {
    running = false;
    schedule();
  }
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(() => {
    if (document.hidden) schedule();
    else void refresh();
  }, REFRESH_MS);
}

$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = $('api-key').value.trim();
  $('api-key').value = '';
  if (!key || key.length > 1024) {
    showKeyForm('Paste the platform API key (BUBBLE_API_KEY).');
    return;
  }
  writeKey(key);
  void refresh();
});
$('forget-key').addEventListener('click', () => {
  writeKey('');
  showKeyForm('');
  $('api-key').focus();
});
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) void refresh();
});
void refresh();
`;

const BODY = `
<main>
  <header>
    <h1><span class="dot" aria-hidden="true">●</span> bubble dashboard</h1>
    <button type="button" id="forget-key" class="secondary" hidden>Forget key</button>
    <p id="status" class="status" role="status" aria-live="polite">loading…</p>
  </header>

  <section id="key-section" aria-labelledby="key-title" hidden>
    <h2 id="key-title">Platform API key</h2>
    <form id="key-form" method="post" novalidate>
      <label for="api-key">The cluster view reads GET /v1/cluster, which needs the platform key</label>
      <div class="row">
        <input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck="false"
          maxlength="1024" aria-describedby="key-hint">
        <button type="submit">Show cluster</button>
      </div>
      <p class="hint" id="key-hint">Kept in this tab's sessionStorage only and sent as the
        X-Api-Key header to this origin; never in a URL. "Forget key" removes it.</p>
      <p id="key-error" class="error" role="alert"></p>
    </form>
  </section>

  <div id="cluster" hidden>
    <section aria-labelledby="overview-title">
      <h2 id="overview-title">Cluster</h2>
      <dl class="cards">
        <div><dt>Leader</dt><dd id="leader" class="id">–</dd></div>
        <div><dt>Assignment generation</dt><dd id="generation">–</dd></div>
        <div><dt>Online users</dt><dd id="online">–</dd></div>
        <div><dt>Pools owned</dt><dd id="pools-owned">–</dd></div>
        <div><dt>Live nodes</dt><dd id="node-count">–</dd></div>
        <div><dt>Slowest last sweep</dt><dd id="sweep-longest">–</dd></div>
      </dl>
    </section>

    <div class="columns">
      <section aria-labelledby="pools-title">
        <h2 id="pools-title">Pools by owner <span class="muted">(online users in each)</span></h2>
        <div id="pools" class="grid" role="img" aria-label="pools"></div>
      </section>
      <section aria-labelledby="owners-title">
        <h2 id="owners-title">Owners</h2>
        <ul id="owners" class="legend" aria-labelledby="owners-title"></ul>
      </section>
    </div>

    <section aria-labelledby="nodes-title">
      <h2 id="nodes-title">Live nodes</h2>
      <div class="scroll">
        <table>
          <thead><tr><th>Role</th><th>Id</th><th>URL</th><th class="num">Pools</th>
            <th class="num">Up</th><th class="num">Seen</th></tr></thead>
          <tbody id="nodes"></tbody>
        </table>
      </div>
    </section>

    <section aria-labelledby="sweeps-title">
      <h2 id="sweeps-title">Last sweep of each core</h2>
      <div class="scroll">
        <table>
          <thead><tr><th>Core</th><th class="num">At</th><th class="num">Duration</th>
            <th class="num">Pools</th><th class="num">Users</th><th class="num">Changed</th>
            <th class="num">Redis commands</th><th class="num">Stale writes</th>
            <th class="num">Drift repaired</th></tr></thead>
          <tbody id="sweeps"></tbody>
        </table>
      </div>
    </section>
  </div>

  <section aria-labelledby="gateway-title">
    <h2 id="gateway-title">This process <span class="muted">(GET /metrics)</span></h2>
    <p id="metrics-missing" class="muted" hidden>This port does not serve /metrics.</p>
    <dl id="gateway-cards" class="cards">
      <div><dt>WebSocket connections</dt><dd id="ws-connections">–</dd></div>
      <div><dt>Users held (sockets and pollers)</dt><dd id="users-held">–</dd></div>
      <div><dt>HTTP requests / s</dt><dd id="requests-rate">–</dd></div>
      <div><dt>Posts ingested / s</dt><dd id="posts-rate">–</dd></div>
      <div><dt>Badges written / s</dt><dd id="written-rate">–</dd></div>
      <div><dt>Badges pushed to sockets / s</dt><dd id="pushes-rate">–</dd></div>
      <div><dt>Push backlog (users waiting)</dt><dd id="push-backlog">–</dd></div>
      <div><dt>Push wait p99 (since start)</dt><dd id="push-wait">–</dd></div>
      <div><dt>Sweep p50 / p99 (since start)</dt><dd id="sweep-quantiles">–</dd></div>
      <div><dt>Resident memory</dt><dd id="rss">–</dd></div>
    </dl>
  </section>
</main>
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** Nothing but this page's own style and script, and fetches back to this origin. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function dashboardPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>bubble dashboard</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
${BODY}
<script type="module">${SCRIPT}</script>
</body>
</html>
`;
}

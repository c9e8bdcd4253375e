import { createHash } from 'node:crypto';
import { DASHBOARD_SCRIPT, DASHBOARD_STYLE } from './browser-bundle.generated.js';

/**
 * The operator dashboard: one HTML document, its style and script inline (bundled from
 * ./browser/ by scripts/build-dashboard.mjs), loading nothing. It reads GET /v1/cluster and
 * GET /v1/cluster/history with the platform API key the person pastes (kept in sessionStorage,
 * sent only as the X-Api-Key header) and GET /metrics of the process that serves it, every few
 * seconds. The CSP allows exactly the two inline blocks, by hash, and connections back to this
 * origin.
 */

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

    <section aria-labelledby="charts-title">
      <h2 id="charts-title">Last 15 minutes <span class="muted" id="charts-note"></span></h2>
      <div id="charts" class="charts">
        <figure class="chart" id="chart-sweep"><figcaption>Sweep duration, all cores</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-changed"><figcaption>Changed badges / s</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-pushes"><figcaption>Pushes to sockets / s, per gateway</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-connections"><figcaption>WebSocket connections, per gateway</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-online"><figcaption>Online users</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-core-sweep"><figcaption>Longest sweep, per core</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-core-changed"><figcaption>Changed badges / s, per core</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-drift"><figcaption>Drift repaired</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
        <figure class="chart" id="chart-stale"><figcaption>Stale writes refused</figcaption><div class="plot-slot"></div><ul class="series"></ul></figure>
      </div>
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

    <section aria-labelledby="ingest-title" id="ingest-section" hidden>
      <h2 id="ingest-title">Ingest stream <span class="muted">(per partition; dead letters: bubble dead list)</span></h2>
      <div class="scroll">
        <table>
          <thead><tr><th class="num">Partition</th><th class="num">Lag</th>
            <th class="num">Pending</th><th class="num">Oldest pending</th>
            <th class="num">Dead letters</th></tr></thead>
          <tbody id="ingest"></tbody>
        </table>
      </div>
      <dl id="webhook-cards" class="cards" hidden>
        <div><dt>Offline deliveries queued</dt><dd id="webhook-queued">–</dd></div>
        <div><dt>Oldest queued</dt><dd id="webhook-oldest">–</dd></div>
        <div><dt>Retrying</dt><dd id="webhook-retrying">–</dd></div>
        <div><dt>Delivery dead letters</dt><dd id="webhook-dead">–</dd></div>
      </dl>
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
  `script-src ${sha256(DASHBOARD_SCRIPT)}`,
  `style-src ${sha256(DASHBOARD_STYLE)}`,
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
<style>${DASHBOARD_STYLE}</style>
</head>
<body>
${BODY}
<script type="module">${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
}

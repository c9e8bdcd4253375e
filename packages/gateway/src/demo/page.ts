import { createHash } from 'node:crypto';

/**
 * The demo page: one HTML document with its style and script inline, loading nothing but the SDK
 * from /demo/sdk/. The CSP allows exactly these two inline blocks, by hash.
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
  font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
  color: var(--ink);
  background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; padding: 2rem 1rem; }
main { max-width: 34rem; margin: 0 auto; }
header { display: flex; align-items: baseline; gap: 0.75rem; margin-bottom: 1.25rem; }
h1 { font-size: 1.6rem; margin: 0; letter-spacing: -0.02em; }
h1 .dot { color: var(--red); }
header p { margin: 0; color: var(--muted); }
h2 { font-size: 1.1rem; margin: 0 0 1rem; }
h3 { font-size: 0.8rem; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); margin: 1.25rem 0 0.5rem; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 14px; padding: 1.5rem; box-shadow: 0 1px 3px rgb(0 0 0 / 0.05); }
label { display: block; font-weight: 600; margin: 0.9rem 0 0.3rem; }
.hint { display: block; color: var(--muted); font-size: 0.85rem; margin: -0.15rem 0 0.35rem; }
input { width: 100%; font: inherit; padding: 0.55rem 0.7rem; border: 1px solid #b9c1ce; border-radius: 8px; }
input:focus-visible, button:focus-visible { outline: 3px solid rgb(41 87 214 / 0.45); outline-offset: 2px; }
button { font: inherit; font-weight: 600; padding: 0.55rem 1rem; border-radius: 8px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: transparent; color: var(--accent); }
button:disabled { opacity: 0.55; cursor: progress; }
form button { margin-top: 1.2rem; }
.error { color: #b3261e; min-height: 1.2em; margin: 0.8rem 0 0; }
.error:empty { display: none; }
.top { display: flex; justify-content: space-between; align-items: baseline; flex-wrap: wrap; gap: 0.5rem; }
.top h2 { margin: 0; }
.state { display: inline-flex; align-items: center; gap: 0.35rem; font-weight: 600; }
.state::before { content: ''; width: 0.6rem; height: 0.6rem; border-radius: 50%; background: #9aa3b2; }
.state[data-state='open']::before { background: #1e9e55; }
.state[data-state='connecting']::before { background: #e0a100; }
.state[data-state='polling']::before { background: #2957d6; }
.badge-row { display: flex; align-items: center; gap: 1.5rem; margin: 1.5rem 0 0.5rem; }
.bubble { min-width: 6.5rem; height: 6.5rem; padding: 0 1.2rem; border-radius: 3.25rem; background: var(--red); color: #fff; display: flex; align-items: center; justify-content: center; font-size: 3.4rem; font-weight: 800; font-variant-numeric: tabular-nums; box-shadow: 0 6px 18px rgb(229 56 59 / 0.35); transition: background 0.2s, box-shadow 0.2s; }
@media (prefers-reduced-motion: reduce) { .bubble { transition: none; } }
.bubble[data-zero='true'] { background: #e4e8ee; color: var(--muted); box-shadow: none; }
.breakdown { display: grid; grid-template-columns: repeat(3, 1fr); gap: 0.5rem; margin: 0; flex: 1; }
.breakdown div { border: 1px solid var(--line); border-radius: 10px; padding: 0.5rem 0.6rem; }
.breakdown dt { font-size: 0.8rem; color: var(--muted); }
.breakdown dd { margin: 0; font-size: 1.5rem; font-weight: 700; font-variant-numeric: tabular-nums; }
ul { list-style: none; margin: 0; padding: 0; }
#conversations li { display: flex; justify-content: space-between; padding: 0.35rem 0; border-bottom: 1px solid var(--line); }
#conversations .count { background: var(--red); color: #fff; border-radius: 1rem; padding: 0 0.55rem; font-weight: 700; font-size: 0.85rem; }
#reddots { display: flex; flex-wrap: wrap; gap: 0.4rem; }
#reddots li { display: inline-flex; align-items: center; gap: 0.35rem; border: 1px solid var(--line); border-radius: 1rem; padding: 0.15rem 0.6rem; }
#reddots li::before { content: ''; width: 0.5rem; height: 0.5rem; border-radius: 50%; background: var(--red); }
li.empty { color: var(--muted); border: 0 !important; }
#reddots li.empty { padding: 0; }
#reddots li.empty::before { display: none; }
.meta { color: var(--muted); font-size: 0.85rem; margin: 1.25rem 0 0; }
code { font-size: 0.85em; background: #eef1f6; padding: 0.05rem 0.3rem; border-radius: 4px; }
.actions { display: flex; gap: 0.6rem; flex-wrap: wrap; margin-top: 1.25rem; }
.actions .secondary { margin-left: auto; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
[hidden] { display: none !important; }
`;

const SCRIPT = `
import { BubbleClient } from '/demo/sdk/index.js';

const $ = (id) => document.getElementById(id);
const devTokens = document.body.dataset.devTokens === 'true';
const ID = /^[A-Za-z0-9_.:@-]{1,64}$/;
let client;

$('token-hint').textContent = devTokens
  ? 'Optional in development: leave it empty and the gateway mints one for this user.'
  : 'A JWT whose subject is this user (npx bubble token <user>).';
$('token').required = !devTokens;

async function mint(user) {
  const res = await fetch('/demo/token', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || typeof body.token !== 'string') {
    throw new Error(body.error?.message ?? 'could not get a token (HTTP ' + res.status + ')');
  }
  return body.token;
}

function fill(list, entries, item) {
  list.replaceChildren();
  for (const entry of entries) list.append(item(entry));
  if (entries.length === 0) {
    const li = document.createElement('li');
    li.className = 'empty';
    li.textContent = 'none';
    list.append(li);
  }
}

function render(badge) {
  $('display').textContent = badge.display;
  $('bubble').dataset.zero = String(badge.total === 0);
  $('feed').textContent = badge.feed;
  $('notices').textContent = badge.notices;
  $('conversations-total').textContent = badge.conversationsTotal;
  const conversations = Object.entries(badge.conversations).sort(([a], [b]) => (a < b ? -1 : 1));
  fill($('conversations'), conversations, ([id, count]) => {
    const li = document.createElement('li');
    const name = document.createElement('span');
    const n = document.createElement('span');
    name.textContent = id;
    n.className = 'count';
    n.textContent = count;
    li.append(name, n);
    return li;
  });
  fill($('reddots'), badge.reddots, (name) => {
    const li = document.createElement('li');
    li.textContent = name;
    return li;
  });
  $('who').textContent = badge.user;
  $('epoch').textContent = badge.epoch;
  $('version').textContent = badge.version;
  const at = new Date(badge.computedAt);
  $('computed-at').dateTime = at.toISOString();
  $('computed-at').textContent = at.toLocaleTimeString();
  document.title = (badge.total > 0 ? '(' + badge.display + ') ' : '') + 'bubble demo';
  $('error').textContent = '';
}

function showState(state) {
  $('state').dataset.state = state;
  $('state').textContent = state;
}

function signOut() {
  client?.close();
  client = undefined;
  $('badge-view').hidden = true;
  $('signin').hidden = false;
  document.title = 'bubble demo';
  $('user').focus();
}

$('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const button = event.submitter;
  const user = $('user').value.trim();
  const typed = $('token').value.trim();
  $('signin-error').textContent = '';
  if (!ID.test(user)) {
    $('signin-error').textContent = 'A user id is 1 to 64 letters, digits or _ . : @ -';
    return;
  }
  if (!typed && !devTokens) {
    $('signin-error').textContent = 'A token is required.';
    return;
  }
  if (button) button.disabled = true;
  try {
    const token = typed || (await mint(user));
    client?.close();
    client = new BubbleClient({
      url: location.origin,
      token,
      getToken: typed ? undefined : () => mint(user),
    });
    client.on('badge', render);
    client.on('state', showState);
    client.on('error', (error) => {
      $('error').textContent = (error.fatal ? 'Stopped: ' : '') + error.message + ' (' + error.code + ')';
    });
    $('who').textContent = user;
    $('display').textContent = '–';
    $('signin').hidden = true;
    $('badge-view').hidden = false;
    client.start();
    showState(client.state);
    $('read-all').focus();
  } catch (error) {
    $('signin-error').textContent = error.message;
  } finally {
    if (button) button.disabled = false;
  }
});

for (const [id, body] of [['read-all', { scope: 'all' }], ['read-feed', { scope: 'feed' }]]) {
  $(id).addEventListener('click', async () => {
    if (!client) return;
    $(id).disabled = true;
    try {
      render(await client.read(body));
    } catch (error) {
      $('error').textContent = 'Read failed: ' + error.message;
    } finally {
      $(id).disabled = false;
    }
  });
}
$('sign-out').addEventListener('click', signOut);
`;

const BODY = `
<main>
  <header>
    <h1><span class="dot" aria-hidden="true">●</span> bubble</h1>
    <p>live unread badge demo</p>
  </header>

  <section id="signin" aria-labelledby="signin-title">
    <h2 id="signin-title">Sign in</h2>
    <form id="signin-form" method="post" novalidate>
      <label for="user">User id</label>
      <input id="user" name="user" required maxlength="64" autocomplete="username"
        autocapitalize="off" spellcheck="false" pattern="[A-Za-z0-9_.:@\\-]{1,64}">
      <label for="token">Token</label>
      <span class="hint" id="token-hint"></span>
      <input id="token" name="token" type="password" autocomplete="off" spellcheck="false"
        aria-describedby="token-hint">
      <button type="submit">Sign in</button>
      <p id="signin-error" class="error" role="alert"></p>
    </form>
  </section>

  <section id="badge-view" aria-labelledby="badge-title" hidden>
    <div class="top">
      <h2 id="badge-title">Signed in as <span id="who"></span></h2>
      <p>Connection: <span id="state" class="state" data-state="closed">closed</span></p>
    </div>
    <div class="badge-row">
      <div id="bubble" class="bubble" data-zero="true" role="status" aria-live="polite"
        aria-atomic="true"><span id="display">–</span><span class="sr-only"> unread</span></div>
      <dl class="breakdown" aria-label="Breakdown">
        <div><dt>Feed</dt><dd id="feed">0</dd></div>
        <div><dt>Notices</dt><dd id="notices">0</dd></div>
        <div><dt>Conversations</dt><dd id="conversations-total">0</dd></div>
      </dl>
    </div>
    <h3 id="conversations-title">Conversations</h3>
    <ul id="conversations" aria-labelledby="conversations-title"><li class="empty">none</li></ul>
    <h3 id="reddots-title">Red dots</h3>
    <ul id="reddots" aria-labelledby="reddots-title"><li class="empty">none</li></ul>
    <div class="actions">
      <button type="button" id="read-all">Read all</button>
      <button type="button" id="read-feed">Read feed</button>
      <button type="button" id="sign-out" class="secondary">Sign out</button>
    </div>
    <p class="meta">epoch <code id="epoch">–</code> · version <code id="version">–</code> ·
      as of <time id="computed-at">–</time></p>
    <p id="error" class="error" role="alert"></p>
  </section>
</main>
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * Nothing but this page's own style and script, the SDK from this origin, and connections back
 * to it (ws:/wss: for browsers whose 'self' does not cover WebSocket schemes).
 */
export const DEMO_CSP = [
  "default-src 'none'",
  `script-src 'self' ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self' ws: wss:",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The page; `devTokens` tells it that POST /demo/token can mint a token from a user id. */
export function demoPage(devTokens: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>bubble demo</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body data-dev-tokens="${devTokens}">
${BODY}
<script type="module">${SCRIPT}</script>
</body>
</html>
`;
}

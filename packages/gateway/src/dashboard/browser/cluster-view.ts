import type { ClusterStatus } from '@bubble/protocol';
import { byId, element, setText } from './dom.js';
import { ago, fmt, ms, span } from './format.js';
import { ownerColour } from './owner-colour.js';

const MAX_NUMBERED_POOLS = 400;
const ROLE_ORDER: Record<string, number> = { server: 0, core: 1, gateway: 2, all: 3 };

function emptyRow(body: HTMLElement, columns: number, text: string): void {
  const tr = document.createElement('tr');
  const td = element('td', text, 'empty') as HTMLTableCellElement;
  td.colSpan = columns;
  tr.append(td);
  body.replaceChildren(tr);
}

const ownerOf = (owner: string | null | undefined) =>
  owner === null || owner === undefined ? '' : String(owner);

/** The cards, the pool grid, the owners, the nodes and the last sweeps: the cluster as of now. */
export function renderCluster(status: ClusterStatus, now: number): void {
  const owners = new Map<string, { pools: number; online: number }>();
  for (const p of status.pools) {
    const key = ownerOf(p.owner);
    const entry = owners.get(key) ?? { pools: 0, online: 0 };
    entry.pools++;
    entry.online += Number(p.online) || 0;
    owners.set(key, entry);
  }
  const owned = status.pools.length - (owners.get('')?.pools ?? 0);
  setText('leader', status.leader ?? 'none');
  setText('generation', fmt(status.generation));
  setText('online', fmt(status.online));
  setText('pools-owned', `${fmt(owned)} / ${fmt(status.pools.length)}`);
  setText('node-count', fmt(status.nodes.length));

  renderPools(status, owned);
  renderOwners(owners);
  renderNodes(status, owners, now);
  renderSweeps(status, now);
  renderIngest(status);
  const longest = status.sweeps.reduce((m, s) => Math.max(m, Number(s.durationMs) || 0), 0);
  setText('sweep-longest', status.sweeps.length ? ms(longest) : '–');
}

/** One cell per pool, coloured by owner, reused between refreshes. */
function renderPools(status: ClusterStatus, owned: number): void {
  const grid = byId('pools');
  const count = status.pools.length;
  const cols = Math.max(1, Math.min(100, Math.ceil(Math.sqrt(count))));
  grid.style.setProperty('--cols', String(cols));
  grid.setAttribute('aria-label', `${count} pools, ${owned} owned, coloured by owner`);
  while (grid.children.length > count) grid.lastElementChild!.remove();
  while (grid.children.length < count) grid.append(element('div', '', 'cell'));
  status.pools.forEach((p, i) => {
    const el = grid.children[i] as HTMLElement;
    const owner = ownerOf(p.owner);
    el.dataset.owned = String(owner !== '');
    el.dataset.online = String(p.online);
    if (owner) el.style.setProperty('--c', ownerColour(owner));
    else el.style.removeProperty('--c');
    el.textContent = count <= MAX_NUMBERED_POOLS ? String(p.online) : '';
    el.title = `pool ${p.pool} · ${owner || 'no owner'} · ${p.online} online`;
  });
}

function renderOwners(owners: Map<string, { pools: number; online: number }>): void {
  const legend = byId('owners');
  legend.replaceChildren();
  const sorted = [...owners.entries()].sort((a, b) =>
    a[0] === '' ? 1 : b[0] === '' ? -1 : a[0] < b[0] ? -1 : 1,
  );
  for (const [id, entry] of sorted) {
    const li = document.createElement('li');
    const swatch = element('span', '', 'swatch');
    swatch.dataset.owned = String(id !== '');
    if (id) swatch.style.setProperty('--c', ownerColour(id));
    const pools = `${entry.pools} ${entry.pools === 1 ? 'pool' : 'pools'}`;
    li.append(
      swatch,
      element('span', id || 'no owner', 'who'),
      element('span', `${pools} · ${fmt(entry.online)} online`, 'n'),
    );
    legend.append(li);
  }
}

function renderNodes(
  status: ClusterStatus,
  owners: Map<string, { pools: number; online: number }>,
  now: number,
): void {
  const body = byId('nodes');
  if (status.nodes.length === 0) return emptyRow(body, 6, 'no live nodes');
  body.replaceChildren();
  const list = [...status.nodes].sort(
    (a, b) => (ROLE_ORDER[a.role] ?? 9) - (ROLE_ORDER[b.role] ?? 9) || (a.id < b.id ? -1 : 1),
  );
  for (const n of list) {
    const tr = document.createElement('tr');
    const role = element('td', String(n.role));
    if (n.id === status.leader) role.append(element('span', 'leader', 'tag'));
    tr.append(
      role,
      element('td', String(n.id), 'id'),
      element('td', n.url ? String(n.url) : '–'),
      element('td', fmt(owners.get(String(n.id))?.pools ?? 0), 'num'),
      element('td', span(now - n.startedAt), 'num'),
      element('td', ago(n.seenAt, now), 'num'),
    );
    body.append(tr);
  }
}

function renderSweeps(status: ClusterStatus, now: number): void {
  const body = byId('sweeps');
  if (status.sweeps.length === 0) return emptyRow(body, 9, 'no sweep reported yet');
  body.replaceChildren();
  for (const s of [...status.sweeps].sort((a, b) => (a.node < b.node ? -1 : 1))) {
    const tr = document.createElement('tr');
    tr.append(
      element('td', String(s.node), 'id'),
      element('td', ago(s.at, now), 'num'),
      element('td', ms(s.durationMs), 'num'),
      element('td', fmt(s.pools), 'num'),
      element('td', fmt(s.users), 'num'),
      element('td', fmt(s.changed), 'num'),
      element('td', fmt(s.redisCommands), 'num'),
      element('td', fmt(s.staleWritesRejected), 'num'),
      element('td', fmt(s.driftRepaired), 'num'),
    );
    body.append(tr);
  }
}

/** The ingest stream's backlog and the offline-delivery queue, shown once a gateway reports them. */
function renderIngest(status: ClusterStatus): void {
  const partitions = status.ingest?.partitions;
  const webhook = status.webhook ?? undefined;
  byId('ingest-section').hidden = partitions === undefined && webhook === undefined;
  const body = byId('ingest');
  if (!partitions || partitions.length === 0) {
    emptyRow(body, 5, 'no ingest partitions reported');
  } else {
    body.replaceChildren();
    for (const p of [...partitions].sort((a, b) => a.partition - b.partition)) {
      const tr = document.createElement('tr');
      const dead = element('td', fmt(p.deadLetters), 'num');
      if (p.deadLetters > 0) dead.dataset.state = 'error';
      tr.append(
        element('td', fmt(p.partition), 'num'),
        element('td', fmt(p.lag), 'num'),
        element('td', fmt(p.pending), 'num'),
        element('td', p.pending > 0 ? span(p.oldestPendingMs) : '–', 'num'),
        dead,
      );
      body.append(tr);
    }
  }
  byId('webhook-cards').hidden = webhook === undefined;
  if (webhook) {
    setText('webhook-queued', fmt(webhook.queued));
    setText('webhook-oldest', webhook.queued > 0 ? span(webhook.oldestQueuedMs) : '–');
    setText('webhook-retrying', fmt(webhook.retrying));
    setText('webhook-dead', fmt(webhook.deadLetters));
  }
}

import {
  checkInput,
  describeIssues,
  type ClusterStatus,
  type IngestBacklogView,
  type WebhookBacklogView,
} from '@bubble/protocol';
import { z } from 'zod';
import { loadConfig } from './config.js';
import {
  RemoteError,
  call,
  endpoint,
  errorMessage,
  printable,
  remoteTarget,
  showUrl,
  unauthorized,
  type RemoteTarget,
} from './remote.js';

/** `bubble status`: the cluster at a glance, from GET /v1/cluster of a running gateway. */

const MAX_ENTRIES = 100_000;
const MAX_PARTITIONS = 1024;
const text = z.string().max(512);
const count = z.number().finite().min(0);
const time = z.number().finite();

/**
 * The check of what a gateway answers to GET /v1/cluster before it is read as @bubble/protocol's
 * ClusterStatus (docs/api.md): extra fields are let through untouched, and a node's role is any
 * short text (a newer gateway's role is shown, not refused).
 */
export const clusterSchema: z.ZodType<ClusterStatus> = z.looseObject({
  leader: text.nullable(),
  generation: count,
  pools: z
    .array(z.looseObject({ pool: z.number().int().min(0), owner: text.nullable(), online: count }))
    .max(MAX_ENTRIES),
  nodes: z
    .array(
      z.looseObject({
        id: text,
        role: text,
        url: text.optional(),
        startedAt: time,
        seenAt: time,
      }),
    )
    .max(MAX_ENTRIES),
  sweeps: z
    .array(
      z.looseObject({
        node: text,
        at: time,
        pools: count,
        users: count,
        changed: count,
        durationMs: count,
        reconcileMs: count.optional(),
        redisCommands: count,
        staleWritesRejected: count,
        driftRepaired: count,
        sourcesWaiting: count.optional(),
      }),
    )
    .max(MAX_ENTRIES),
  online: count,
  /** The ingest stream's backlog (gateways on Redis); absent or null where there is none. */
  ingest: z
    .looseObject({
      partitions: z
        .array(
          z.looseObject({
            partition: z.number().int().min(0),
            lag: count,
            pending: count,
            oldestPendingMs: count,
            deadLetters: count,
          }),
        )
        .max(MAX_PARTITIONS),
    })
    .nullish(),
  /** The offline-delivery queue, with BUBBLE_WEBHOOK_URL set. */
  webhook: z
    .looseObject({ queued: count, oldestQueuedMs: count, retrying: count, deadLetters: count })
    .nullish(),
}) as unknown as z.ZodType<ClusterStatus>;

export interface StatusOptions {
  url?: string;
  json?: boolean;
  timeout: number;
}

/** Reads the cluster from the gateway; throws a RemoteError with a clear message otherwise. */
export async function fetchCluster(
  target: RemoteTarget,
  timeoutMs: number,
): Promise<ClusterStatus> {
  const { base } = target;
  const result = await call(endpoint(base, 'v1/cluster'), {
    headers: { 'x-api-key': target.apiKey },
    timeoutMs,
  });
  if (result.status === 401 || result.status === 403) {
    throw unauthorized(base, result, target.keySource);
  }
  if (result.status === 404) {
    throw new RemoteError(
      `${showUrl(base)} has no GET /v1/cluster (${errorMessage(result)}); is it a bubble gateway?`,
    );
  }
  if (result.status !== 200) {
    throw new RemoteError(
      `${showUrl(base)} answered ${result.status} to GET /v1/cluster: ${errorMessage(result)}`,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(result.text);
  } catch {
    throw new RemoteError(`${showUrl(base)} answered GET /v1/cluster with something not JSON`);
  }
  const parsed = checkInput(clusterSchema, body);
  if (!parsed.success) {
    throw new RemoteError(
      `${showUrl(base)} answered GET /v1/cluster with an unexpected shape (${describeIssues(parsed.error)})`,
    );
  }
  return parsed.data;
}

export async function runStatus(options: StatusOptions): Promise<void> {
  const target = remoteTarget(options.url, loadConfig());
  const cluster = await fetchCluster(target, options.timeout * 1000);
  process.stdout.write(
    options.json
      ? `${JSON.stringify(cluster, null, 2)}\n`
      : formatCluster(cluster, showUrl(target.base), Date.now()),
  );
}

/** Owner marks in the pool map: A–Z, a–z, 0–9, then '#'. */
const MARKS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const MAX_MAPPED_POOLS = 2500;

/** The human-readable view: summary, nodes, pools by owner (with a map), last sweeps. */
export function formatCluster(cluster: ClusterStatus, where: string, now: number): string {
  const out: string[] = [];
  const roles = new Map<string, number>();
  for (const node of cluster.nodes) roles.set(node.role, (roles.get(node.role) ?? 0) + 1);
  const owners = new Map<string, { pools: number; online: number }>();
  let unowned = 0;
  for (const pool of cluster.pools) {
    if (pool.owner === null) {
      unowned++;
      continue;
    }
    const entry = owners.get(pool.owner) ?? { pools: 0, online: 0 };
    entry.pools++;
    entry.online += pool.online;
    owners.set(pool.owner, entry);
  }
  const roleList = [...roles].map(([role, n]) => `${n} ${printable(role)}`).join(', ') || 'none';

  out.push(`bubble cluster at ${where}`);
  out.push(
    `  leader      ${cluster.leader === null ? '(none)' : printable(cluster.leader)}`,
    `  generation  ${cluster.generation}`,
    `  online      ${cluster.online} users`,
    `  pools       ${cluster.pools.length} (${cluster.pools.length - unowned} owned, ${unowned} unowned)`,
    `  nodes       ${cluster.nodes.length} live (${roleList})`,
    '',
  );

  out.push('NODES');
  const nodes = [...cluster.nodes].sort(
    (a, b) => roleOrder(a.role) - roleOrder(b.role) || a.id.localeCompare(b.id),
  );
  out.push(
    ...table(
      ['ROLE', 'ID', 'URL', 'POOLS', 'UP', 'SEEN'],
      nodes.map((n) => [
        `${printable(n.role)}${n.id === cluster.leader ? ' *' : ''}`,
        printable(n.id),
        n.url ? printable(n.url) : '-',
        String(owners.get(n.id)?.pools ?? 0),
        span(now - n.startedAt),
        `${ago(now - n.seenAt)} ago`,
      ]),
      new Set([3, 4, 5]),
      'no live nodes',
    ),
  );
  if (cluster.leader !== null) out.push('  (* leads)');
  out.push('');

  out.push('POOLS');
  const ownerList = [...owners].sort((a, b) => a[0].localeCompare(b[0]));
  const mark = new Map(ownerList.map(([id], i) => [id, MARKS[i] ?? '#']));
  const ownerRows = ownerList.map(([id, e]) => [
    mark.get(id)!,
    printable(id),
    String(e.pools),
    String(e.online),
  ]);
  if (unowned > 0) {
    const online = cluster.pools.filter((p) => p.owner === null).reduce((a, p) => a + p.online, 0);
    ownerRows.push(['.', '(no owner)', String(unowned), String(online)]);
  }
  out.push(...table(['', 'OWNER', 'POOLS', 'ONLINE'], ownerRows, new Set([2, 3]), 'no pools'));
  if (cluster.pools.length > 0 && cluster.pools.length <= MAX_MAPPED_POOLS) {
    out.push('', ...poolMap(cluster, mark));
  }
  out.push('');

  out.push('LAST SWEEPS');
  const sweeps = [...cluster.sweeps].sort((a, b) => a.node.localeCompare(b.node));
  out.push(
    ...table(
      [
        'CORE',
        'AT',
        'DURATION',
        'RECONCILE',
        'POOLS',
        'USERS',
        'CHANGED',
        'REDIS',
        'STALE',
        'DRIFT',
        'SOURCES WAITING',
      ],
      sweeps.map((s) => [
        printable(s.node),
        `${ago(now - s.at)} ago`,
        duration(s.durationMs),
        s.reconcileMs === undefined ? '-' : duration(s.reconcileMs),
        String(s.pools),
        String(s.users),
        String(s.changed),
        String(s.redisCommands),
        String(s.staleWritesRejected),
        String(s.driftRepaired),
        s.sourcesWaiting === undefined ? '-' : String(s.sourcesWaiting),
      ]),
      new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
      'no sweep reported yet',
    ),
  );
  if (cluster.ingest) out.push('', ...ingestSection(cluster.ingest.partitions));
  if (cluster.webhook) out.push('', ...webhookSection(cluster.webhook));
  return `${out.join('\n')}\n`;
}

/** Per partition: entries not yet delivered, delivered but not acknowledged, dead letters. */
function ingestSection(partitions: readonly IngestBacklogView[]): string[] {
  const sorted = [...partitions].sort((a, b) => a.partition - b.partition);
  const sum = (pick: (p: IngestBacklogView) => number) =>
    sorted.reduce((total, p) => total + pick(p), 0);
  const oldest = sorted.reduce((most, p) => Math.max(most, p.oldestPendingMs), 0);
  const dead = sum((p) => p.deadLetters);
  return [
    `INGEST STREAM  lag ${sum((p) => p.lag)}, pending ${sum((p) => p.pending)}${
      oldest > 0 ? ` (oldest ${span(oldest)})` : ''
    }, dead letters ${dead}${dead > 0 ? ' (bubble dead list)' : ''}`,
    ...table(
      ['PARTITION', 'LAG', 'PENDING', 'OLDEST PENDING', 'DEAD LETTERS'],
      sorted.map((p) => [
        String(p.partition),
        String(p.lag),
        String(p.pending),
        p.pending === 0 ? '-' : span(p.oldestPendingMs),
        String(p.deadLetters),
      ]),
      new Set([0, 1, 2, 3, 4]),
      'no partitions reported',
    ),
  ];
}

function webhookSection(webhook: WebhookBacklogView): string[] {
  return [
    'OFFLINE DELIVERY',
    `  queued        ${webhook.queued}${
      webhook.queued > 0 ? ` (oldest ${span(webhook.oldestQueuedMs)})` : ''
    }`,
    `  retrying      ${webhook.retrying}`,
    `  dead letters  ${webhook.deadLetters}${
      webhook.deadLetters > 0 ? ' (bubble dead list --webhook)' : ''
    }`,
  ];
}

/** Pools in rows of ten (or more for large counts), one owner mark each. */
function poolMap(cluster: ClusterStatus, mark: Map<string, string>): string[] {
  const width = cluster.pools.length <= 200 ? 10 : 50;
  const byPool = [...cluster.pools].sort((a, b) => a.pool - b.pool);
  const last = byPool[byPool.length - 1]!.pool;
  const digits = String(last).length;
  const lines: string[] = [];
  for (let start = 0; start < byPool.length; start += width) {
    const row = byPool.slice(start, start + width);
    const marks = row.map((p) => (p.owner === null ? '.' : mark.get(p.owner)!));
    lines.push(`  ${String(row[0]!.pool).padStart(digits)}  ${marks.join(width <= 10 ? ' ' : '')}`);
  }
  return lines;
}

function roleOrder(role: string): number {
  return ['server', 'core', 'gateway', 'all'].indexOf(role) + 1 || 9;
}

/** Columns padded to their widest cell, `right` ones right-aligned; `empty` stands for no rows. */
export function table(
  head: string[],
  rows: string[][],
  right: ReadonlySet<number>,
  empty: string,
): string[] {
  if (rows.length === 0) return [`  (${empty})`];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    `  ${cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()}`;
  return [line(head), ...rows.map(line)];
}

function duration(ms: number): string {
  return ms < 10
    ? `${ms.toFixed(2)} ms`
    : ms < 1000
      ? `${ms.toFixed(0)} ms`
      : `${(ms / 1000).toFixed(2)} s`;
}

function ago(ms: number): string {
  return ms < 10_000 ? `${(Math.max(0, ms) / 1000).toFixed(1)}s` : span(ms);
}

function span(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400)
    return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

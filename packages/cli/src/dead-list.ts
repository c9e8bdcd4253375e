import { compareStreamIds, DEAD_LETTER_FIELDS } from '@bubble/store';
import { printable } from './remote.js';
import { table } from './status-command.js';
import { partitionsOf, UsageError, type Context, type ListOptions } from './dead-context.js';

/** `bubble dead list`: the dead letters of the ingest stream, or (--webhook) of offline delivery. */

const BODY_COLUMN = 60;
const ERROR_COLUMN = 60;

interface DeadLetter {
  partition: number;
  /** Its id in the dead-letter stream: what replay and drop take. */
  id: string;
  /** The id it had in the ingest stream. */
  entry: string | null;
  v: string | null;
  op: string | null;
  body: string | null;
  error: string | null;
  deliveries: number | null;
  /** Fields beyond those, as the platform wrote them. */
  other?: Record<string, string>;
}

interface WebhookDeadLetter {
  id: string;
  fields: Record<string, string>;
}

export async function list(context: Context, options: ListOptions): Promise<void> {
  if (options.webhook) {
    if (options.partition !== undefined) throw new UsageError('--webhook has no partitions');
    return listWebhook(context, options);
  }
  const partitions = partitionsOf(context, options.partition);
  const counts = await Promise.all(
    partitions.map((p) => context.redis.xlen(context.keys.ingestDead(p))),
  );
  const pages = await Promise.all(
    partitions.map((p) =>
      context.redis.xrange(context.keys.ingestDead(p), '-', '+', 'COUNT', options.limit),
    ),
  );
  const letters = pages
    .flatMap((page, i) => page.map(([id, fields]) => deadLetter(partitions[i]!, id, fields)))
    .sort((a, b) => compareStreamIds(a.id, b.id) || a.partition - b.partition)
    .slice(0, options.limit);
  const total = counts.reduce((sum, n) => sum + n, 0);

  if (options.json) {
    context.out(
      JSON.stringify({
        partitions: partitions.map((partition, i) => ({ partition, deadLetters: counts[i] })),
        total,
        deadLetters: letters,
      }),
    );
    return;
  }
  const where =
    partitions.length === 1 ? `partition ${partitions[0]}` : `${partitions.length} partitions`;
  if (total === 0) {
    context.out(`no dead letters (${where})`);
    return;
  }
  context.out(
    `${total} dead ${total === 1 ? 'letter' : 'letters'} (${where}${
      partitions.length > 1 ? `: ${counts.map((n, i) => `${partitions[i]}=${n}`).join(' ')}` : ''
    })${letters.length < total ? `, the oldest ${letters.length} shown` : ''}`,
  );
  context.out('');
  context.out(
    table(
      ['PARTITION', 'ID', 'ENTRY', 'OP', 'DELIVERIES', 'ERROR', 'BODY'],
      letters.map((l) => [
        String(l.partition),
        l.id,
        l.entry ?? '-',
        l.op === null ? '-' : printable(l.op, 24),
        l.deliveries === null ? '-' : String(l.deliveries),
        l.error === null ? '-' : printable(l.error, ERROR_COLUMN),
        l.body === null ? '-' : printable(l.body, BODY_COLUMN),
      ]),
      new Set([0, 4]),
      '',
    ).join('\n'),
  );
}

async function listWebhook(context: Context, options: ListOptions): Promise<void> {
  const key = context.keys.webhookDead();
  const [total, page] = await Promise.all([
    context.redis.xlen(key),
    context.redis.xrange(key, '-', '+', 'COUNT', options.limit),
  ]);
  const letters: WebhookDeadLetter[] = page.map(([id, fields]) => ({ id, fields: pairs(fields) }));
  if (options.json) {
    context.out(JSON.stringify({ total, deadLetters: letters }));
    return;
  }
  if (total === 0) {
    context.out('no offline-delivery dead letters');
    return;
  }
  context.out(
    `${total} offline-delivery dead ${total === 1 ? 'letter' : 'letters'}${
      letters.length < total ? `, the oldest ${letters.length} shown` : ''
    }`,
  );
  context.out('');
  // The delivery's own columns first; whatever else it carries (its body) after, cut short.
  const shown = ['id', 'status', 'attempts', 'error'];
  const cell = (value: string | undefined, max: number) =>
    value === undefined || value === '' ? '-' : printable(value, max);
  context.out(
    table(
      ['ID', 'DELIVERY', 'STATUS', 'ATTEMPTS', 'ERROR', 'REST'],
      letters.map((l) => [
        l.id,
        cell(l.fields.id, 40),
        cell(l.fields.status, 8),
        cell(l.fields.attempts, 8),
        cell(l.fields.error, ERROR_COLUMN),
        cell(
          Object.entries(l.fields)
            .filter(([name]) => !shown.includes(name))
            .map(([name, value]) => `${name}=${value}`)
            .join(' '),
          BODY_COLUMN,
        ),
      ]),
      new Set([2, 3]),
      '',
    ).join('\n'),
  );
}

function deadLetter(partition: number, id: string, raw: string[]): DeadLetter {
  const fields = pairs(raw);
  const named = (name: string): string | null => fields[name] ?? null;
  const deliveries = Number(fields.deliveries);
  const other = Object.fromEntries(
    Object.entries(fields).filter(
      ([name]) => !DEAD_LETTER_FIELDS.has(name) && !['v', 'op', 'body'].includes(name),
    ),
  );
  return {
    partition,
    id,
    entry: named('entry'),
    v: named('v'),
    op: named('op'),
    body: named('body'),
    error: named('error'),
    deliveries: fields.deliveries !== undefined && Number.isFinite(deliveries) ? deliveries : null,
    ...(Object.keys(other).length > 0 ? { other } : {}),
  };
}

export function pairs(raw: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) fields[raw[i]!] = raw[i + 1]!;
  return fields;
}

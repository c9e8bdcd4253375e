/**
 * The ingest stream's dead letters with real processes: poison entries dead-lettered with
 * their error while the entries around them are applied, `bubble dead list|replay|drop`, and
 * the backlog on /metrics, GET /v1/cluster and `bubble status`. Runs the built CLI, so the
 * workspace is built first.
 */
import { RedisKeys } from '@bubble/store';
import { uniquePrefix, waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import {
  cli,
  direct,
  fieldMap,
  metric,
  metricsOf,
  partitionState,
  platform,
  settings,
  spawnRole,
  useIngestProcesses,
} from './ingest-processes-support.js';

useIngestProcesses();

describe('the ingest stream with real processes', () => {
  it('poison entries go to the dead letters with their error, the entries around them are applied; bubble dead list, replay, drop; the backlog on /metrics, GET /v1/cluster and bubble status', async () => {
    const prefix = uniquePrefix('ingest-dead');
    const keys = new RedisKeys(prefix, 100);
    const env = settings(prefix);
    const gateway = await spawnRole('all', env, 'all');

    // Good and poison entries interleaved in partition 0; partition 1 stays empty.
    const stream = keys.ingest(0);
    const good = (author: string) => [
      'v',
      '1',
      'op',
      'follow',
      'body',
      JSON.stringify({ user: 'u-dead', author }),
    ];
    const poison: Array<{ name: string; fields: string[] }> = [
      { name: 'bad JSON', fields: ['v', '1', 'op', 'follow', 'body', '{"user":"u-dead",'] },
      { name: 'unknown op', fields: ['v', '1', 'op', 'explode', 'body', '{"user":"u-dead"}'] },
      {
        name: 'bad id',
        fields: ['v', '1', 'op', 'follow', 'body', JSON.stringify({ user: 'u dead', author: 'a' })],
      },
      {
        name: 'unknown version',
        fields: [
          'v',
          '99',
          'op',
          'follow',
          'body',
          JSON.stringify({ user: 'u-dead', author: 'a9' }),
        ],
      },
    ];
    const poisonIds: string[] = [];
    await direct.xadd(stream, '*', ...good('a1'));
    for (const [i, entry] of poison.entries()) {
      poisonIds.push((await direct.xadd(stream, '*', ...entry.fields))!);
      await direct.xadd(stream, '*', ...good(`a${i + 2}`));
    }
    const goodAuthors = poison
      .map((_, i) => `a${i + 2}`)
      .concat('a1')
      .sort();

    await waitFor(async () => (await direct.xlen(keys.ingestDead(0))) === poison.length, {
      timeoutMs: 15_000,
      message: `the poison entries never all reached the dead letters\n${gateway.describe()}`,
    });
    const follows = await waitFor(
      async () => {
        const reply = (await platform(gateway.url, 'GET', '/v1/users/u-dead/follows')) as {
          authors: string[];
        };
        return reply.authors.length === goodAuthors.length ? reply.authors : null;
      },
      { timeoutMs: 10_000, message: 'the good entries were not all applied' },
    );
    expect([...follows!].sort()).toEqual(goodAuthors);
    const state = await partitionState(keys, 0);
    expect({ pending: state.pending, lag: state.lag }).toEqual({ pending: 0, lag: 0 });

    // Each dead letter keeps the entry's fields, its id, an error and its delivery count.
    const letters = (await direct.xrange(keys.ingestDead(0), '-', '+')).map(([id, raw]) => ({
      id,
      fields: Object.fromEntries(
        raw.flatMap((_, i) => (i % 2 === 0 ? [[raw[i]!, raw[i + 1]!]] : [])),
      ),
    }));
    expect(letters.map((l) => l.fields.entry)).toEqual(poisonIds);
    for (const [i, letter] of letters.entries()) {
      const original = Object.fromEntries(
        poison[i]!.fields.flatMap((_, j, f) => (j % 2 === 0 ? [[f[j]!, f[j + 1]!]] : [])),
      );
      expect(letter.fields, poison[i]!.name).toMatchObject(original);
      expect(letter.fields.error, poison[i]!.name).toMatch(/\S/);
      expect(Number(letter.fields.deliveries), poison[i]!.name).toBeGreaterThanOrEqual(1);
    }

    // The backlog: per-partition gauges on /metrics, the ingest section of GET /v1/cluster.
    const metrics = await waitFor(
      async () => {
        const text = await metricsOf(gateway);
        return metric(text, 'bubble_ingest_dead_letters', 'partition="0"') === poison.length
          ? text
          : null;
      },
      {
        timeoutMs: 10_000,
        message: 'bubble_ingest_dead_letters{partition="0"} never showed the dead letters',
      },
    );
    for (const partition of [0, 1]) {
      const labels = `partition="${partition}"`;
      expect(metric(metrics!, 'bubble_ingest_lag', labels), `lag ${partition}`).toBe(0);
      expect(metric(metrics!, 'bubble_ingest_pending', labels), `pending ${partition}`).toBe(0);
      expect(
        metric(metrics!, 'bubble_ingest_oldest_pending_seconds', labels),
        `oldest ${partition}`,
      ).toBe(0);
    }
    expect(metric(metrics!, 'bubble_ingest_dead_letters', 'partition="1"')).toBe(0);
    const cluster = (await platform(gateway.url, 'GET', '/v1/cluster')) as {
      ingest?: { partitions: Array<Record<string, number>> };
    };
    expect(cluster.ingest?.partitions).toEqual([
      { partition: 0, lag: 0, pending: 0, oldestPendingMs: 0, deadLetters: poison.length },
      { partition: 1, lag: 0, pending: 0, oldestPendingMs: 0, deadLetters: 0 },
    ]);
    const [status, table, listed] = await Promise.all([
      cli(['status'], { ...env, BUBBLE_URL: gateway.url }),
      cli(['dead', 'list'], env),
      cli(['dead', 'list', '--json'], env),
    ]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      `INGEST STREAM  lag 0, pending 0, dead letters ${poison.length}`,
    );
    expect(status.stdout).toMatch(new RegExp(`^\\s+0\\s+0\\s+0\\s+-\\s+${poison.length}$`, 'm'));
    expect(status.stdout).toMatch(/^\s+1\s+0\s+0\s+-\s+0$/m);

    // bubble dead list: every dead letter, in a table and as JSON.
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`${poison.length} dead letters`);
    for (const letter of letters) expect(table.stdout).toContain(letter.id);
    expect(table.stdout).toContain('explode');
    expect(listed.code, listed.stderr).toBe(0);
    const json = JSON.parse(listed.stdout) as {
      total: number;
      deadLetters: Array<{
        partition: number;
        id: string;
        entry: string;
        op: string;
        body: string;
        error: string;
        deliveries: number;
      }>;
    };
    expect(json.total).toBe(poison.length);
    expect(json.deadLetters.map((l) => [l.partition, l.id, l.entry, l.body])).toEqual(
      letters.map((l) => [0, l.id, l.fields.entry, l.fields.body]),
    );
    expect(json.deadLetters.every((l) => l.error.length > 0 && l.deliveries >= 1)).toBe(true);

    // Bad arguments change nothing (no dead letter removed, no entry appended) and exit 2.
    const lastEntry = async () =>
      fieldMap((await direct.xinfo('STREAM', stream)) as unknown[]).get('last-generated-id');
    const before = await lastEntry();
    const badRuns = [
      ['dead', 'replay', '1-1'],
      ['dead', 'replay', letters[0]!.id, '--partition', '1'],
      ['dead', 'drop', letters[0]!.id, 'not-an-id'],
      ['dead', 'list', '--partition', '5'],
      ['dead', 'list', '--limit', 'many'],
    ];
    const badExits = await Promise.all(badRuns.map((args) => cli(args, env)));
    for (const [i, run] of badExits.entries()) {
      const args = badRuns[i]!.join(' ');
      expect(run.code, `${args}: ${run.stdout}${run.stderr}`).toBe(2);
      expect(run.stderr, args).not.toBe('');
    }
    expect(await direct.xlen(keys.ingestDead(0))).toBe(poison.length);
    expect(await lastEntry()).toBe(before);

    // Replay with nothing fixed: the entry goes back to the stream, and dies again.
    const badJson = letters[0]!;
    const replay = await cli(['dead', 'replay', badJson.id], env);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toContain('replayed 1 dead letter');
    const again = await waitFor(
      async () => {
        const latest = await direct.xrevrange(keys.ingestDead(0), '+', '-', 'COUNT', 1);
        return latest[0] && latest[0][0] !== letters[letters.length - 1]!.id ? latest[0] : null;
      },
      { timeoutMs: 10_000, message: 'the replayed entry never died again' },
    );
    const againFields = Object.fromEntries(
      again![1].flatMap((_, i, f) => (i % 2 === 0 ? [[f[i]!, f[i + 1]!]] : [])),
    );
    expect(againFields).toMatchObject({ v: '1', op: 'follow', body: badJson.fields.body });
    expect(againFields.entry).not.toBe(badJson.fields.entry);
    expect(await direct.xrange(keys.ingestDead(0), badJson.id, badJson.id)).toEqual([]);
    expect(await direct.xlen(keys.ingestDead(0))).toBe(poison.length);

    // Drop one, then the rest.
    const dropOne = await cli(['dead', 'drop', again![0]], env);
    expect(dropOne.code, dropOne.stderr).toBe(0);
    expect(dropOne.stdout).toContain('dropped 1 dead letter');
    expect(await direct.xlen(keys.ingestDead(0))).toBe(poison.length - 1);
    const dropAll = await cli(['dead', 'drop', '--all'], env);
    expect(dropAll.code, dropAll.stderr).toBe(0);
    expect(dropAll.stdout).toContain(`dropped ${poison.length - 1} dead letters`);
    expect(await direct.xlen(keys.ingestDead(0))).toBe(0);
    const empty = await cli(['dead', 'list'], env);
    expect(empty.stdout).toContain('no dead letters');
    await waitFor(
      async () =>
        metric(await metricsOf(gateway), 'bubble_ingest_dead_letters', 'partition="0"') === 0,
      { timeoutMs: 10_000, message: 'the dead-letter gauge never went back to 0' },
    );

    // Offline delivery's dead letters (--webhook): listed with their fields, never replayed,
    // dropped.
    const delivery = ['id', 'd-1', 'body', '{"id":"d-1"}', 'error', 'HTTP 410', 'attempts', '1'];
    const deliveryDead = (await direct.xadd(
      keys.webhookDead(),
      '*',
      ...delivery,
      'status',
      '410',
    ))!;
    const [webhookTable, webhookJson, webhookReplay] = await Promise.all([
      cli(['dead', 'list', '--webhook'], env),
      cli(['dead', 'list', '--webhook', '--json'], env),
      cli(['dead', 'replay', '--webhook', deliveryDead], env),
    ]);
    expect(webhookTable.stdout).toMatch(
      new RegExp(`${deliveryDead}\\s+d-1\\s+410\\s+1\\s+HTTP 410`),
    );
    expect(JSON.parse(webhookJson.stdout)).toEqual({
      total: 1,
      deadLetters: [
        {
          id: deliveryDead,
          fields: {
            id: 'd-1',
            body: '{"id":"d-1"}',
            error: 'HTTP 410',
            attempts: '1',
            status: '410',
          },
        },
      ],
    });
    expect(webhookReplay.code, webhookReplay.stdout).toBe(2);
    const webhookDrop = await cli(['dead', 'drop', '--webhook', deliveryDead], env);
    expect(webhookDrop.code, webhookDrop.stderr).toBe(0);
    expect(webhookDrop.stdout).toContain('dropped 1 offline-delivery dead letter');
    expect(await direct.xlen(keys.webhookDead())).toBe(0);
  }, 60_000);
});

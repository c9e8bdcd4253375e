/**
 * `bubble status`'s ingest-stream and offline-delivery sections: what GET /v1/cluster's `ingest`
 * and `webhook` parts look like in the terminal, and that a gateway without them (absent or
 * null) still parses.
 */
import { describe, expect, it } from 'vitest';
import { clusterSchema, formatCluster } from '../../packages/cli/src/status-command.js';

const NOW = 1_764_460_800_000;
const base = {
  leader: 'srv-1',
  generation: 3,
  pools: [{ pool: 0, owner: 'core-1', online: 2 }],
  nodes: [{ id: 'gw-1', role: 'gateway', startedAt: NOW - 60_000, seenAt: NOW - 1_000 }],
  sweeps: [],
  online: 2,
};

describe('bubble status: ingest stream and offline delivery', () => {
  it('a row per partition, totals on the heading line, the oldest pending age, where to look', () => {
    const cluster = clusterSchema.parse({
      ...base,
      ingest: {
        partitions: [
          { partition: 1, lag: 0, pending: 0, oldestPendingMs: 0, deadLetters: 0 },
          { partition: 0, lag: 120, pending: 12, oldestPendingMs: 95_000, deadLetters: 3 },
        ],
      },
      webhook: { queued: 40, oldestQueuedMs: 2_500, retrying: 2, deadLetters: 1 },
    });
    const text = formatCluster(cluster, 'http://gw', NOW);
    expect(text).toContain(
      'INGEST STREAM  lag 120, pending 12 (oldest 1m35s), dead letters 3 (bubble dead list)',
    );
    const rows = text.split('\n');
    const head = rows.findIndex((line) => line.includes('PARTITION'));
    expect(rows.slice(head, head + 3)).toEqual([
      '  PARTITION  LAG  PENDING  OLDEST PENDING  DEAD LETTERS',
      '          0  120       12           1m35s             3',
      '          1    0        0               -             0',
    ]);
    expect(text).toContain('OFFLINE DELIVERY');
    expect(text).toContain('  queued        40 (oldest 3s)');
    expect(text).toContain('  retrying      2');
    expect(text).toContain('  dead letters  1 (bubble dead list --webhook)');
  });

  it('leaves both out when the gateway reports neither (absent or null)', () => {
    for (const extra of [{}, { ingest: null, webhook: null }]) {
      const text = formatCluster(clusterSchema.parse({ ...base, ...extra }), 'http://gw', NOW);
      expect(text).not.toContain('INGEST STREAM');
      expect(text).not.toContain('OFFLINE DELIVERY');
      expect(text).toContain('LAST SWEEPS');
    }
  });

  it('refuses a backlog that is not counts', () => {
    const bad = {
      ...base,
      ingest: {
        partitions: [{ partition: 0, lag: -1, pending: 0, oldestPendingMs: 0, deadLetters: 0 }],
      },
    };
    expect(clusterSchema.safeParse(bad).success).toBe(false);
  });
});

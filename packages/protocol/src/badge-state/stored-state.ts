import { NO_COUNTS, decodeCounts } from './counts.js';

/** A user's badge state as stored: packed as "<epoch>|<version>|<computedAt>|<counts>". */
export interface StoredBadge {
  epoch: string;
  version: number;
  computedAt: number;
  fields: Record<string, number>;
}

/** A stored state: "<epoch>|<version>|<computedAt>|<counts>". */
export function decodeBadgeState(packed: string): StoredBadge {
  const [epoch, version, computedAt, counts] = packed.split('|');
  return {
    epoch: epoch!,
    version: Number(version),
    computedAt: Number(computedAt),
    fields: decodeCounts(counts ?? NO_COUNTS),
  };
}

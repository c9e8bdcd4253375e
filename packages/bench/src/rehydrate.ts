import { machineFacts } from './live-stack.js';
import { measureRehydrateCold, type RehydrateColdOptions } from './rehydrate-cold.js';
import { measureRehydrateRefill, type RehydrateRefillOptions } from './rehydrate-refill.js';

export interface RehydrateOptions {
  cold: Partial<RehydrateColdOptions>;
  refill: Partial<RehydrateRefillOptions>;
  /** Skip a part (a diagnostic run of the other). */
  parts: readonly ('cold' | 'refill')[];
  profileDir: string | undefined;
  log: (line: string) => void;
}

/**
 * bench.md "rehydrate": users dropped by the lifecycle job come back (the cold start of a
 * dropped user against a held one's, rehydrate-cold.ts), and a store that lost its data heals
 * (100k online users' badges exact again with follows never re-fed, rehydrate-refill.ts).
 */
export async function benchRehydrate(partial: Partial<RehydrateOptions> = {}) {
  const { log = () => {}, parts = ['cold', 'refill'], profileDir } = partial;
  const cold = parts.includes('cold')
    ? await measureRehydrateCold({ log, ...partial.cold })
    : undefined;
  const refill = parts.includes('refill')
    ? await measureRehydrateRefill({ log, profileDir, ...partial.refill })
    : undefined;
  return {
    scenario: 'rehydrate',
    ...cold,
    ...refill,
    machine: machineFacts(),
  };
}

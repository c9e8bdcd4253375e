import { idRecord } from '../ids.js';
import type { BadgeFields } from './fields.js';

/**
 * The badge-state text both engines agree on (docs/redis-keys.md). A stored state is packed as
 * "<epoch>|<version>|<computedAt>|<counts>"; its counts as "name=value,…", non-zero only,
 * sorted by name. Two states have equal counts exactly when their counts text is equal: the
 * Redis script compares the text, the memory engine sameCounts, which agrees with it. Names are
 * ids or prefixed ids and never hold "=", "," or "|".
 */

/** The counts text of a state without counts. */
export const NO_COUNTS = '';

/** A state's counts as stored. */
export function encodeCounts(fields: BadgeFields): string {
  const names = Object.keys(fields);
  if (names.length === 1) {
    const value = fields[names[0]!]!;
    return value === 0 ? NO_COUNTS : `${names[0]}=${value}`;
  }
  names.sort();
  let text = NO_COUNTS;
  for (const name of names) {
    const value = fields[name]!;
    if (value === 0) continue;
    text += text === NO_COUNTS ? `${name}=${value}` : `,${name}=${value}`;
  }
  return text;
}

export function decodeCounts(text: string): Record<string, number> {
  const fields = idRecord<number>();
  if (text === NO_COUNTS) return fields;
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    fields[pair.slice(0, at)] = Number(pair.slice(at + 1));
  }
  return fields;
}

/**
 * encodeCounts(a) === encodeCounts(b), without making either string: the same non-zero counts
 * (a zero count is no count; equal numbers write equal text, NaN included).
 */
export function sameCounts(a: BadgeFields, b: BadgeFields): boolean {
  let nonZero = 0;
  for (const name in a) {
    const value = a[name]!;
    if (value === 0) continue;
    if (!Object.hasOwn(b, name) || !Object.is(b[name], value)) return false;
    nonZero++;
  }
  for (const name in b) if (b[name] !== 0) nonZero--;
  return nonZero === 0;
}

import { idRecord } from '@bubble/protocol';
import {
  MAX_NUMBER_LENGTH,
  MAX_UTF8_BYTES_PER_UNIT,
  numberLength,
  writeNumber,
  writeText,
} from './bytes.js';
import type { BadgeChange, BadgeChangeReader } from './cluster-types.js';
import { epochCode } from './epoch.js';
import type { BadgeFields, StoredBadge } from './types.js';

/**
 * The badge-state text both engines agree on (docs/redis-keys.md). A stored state is packed as
 * "<epoch>|<version>|<computedAt>|<counts>"; its counts as "name=value,…", non-zero only,
 * sorted by name. Two states have equal counts exactly when their counts text is equal: the
 * Redis script compares the text, the memory engine sameCounts, which agrees with it. Names are
 * ids or prefixed ids and never hold "=", "," or "|".
 */

const PIPE = 0x7c;
const EQUALS = 0x3d;
const NO_COUNTS = '';

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

/**
 * A published message: the writer's fencing token (or "-") on the first line, then two lines per
 * change: the user, then the packed state.
 */
export function decodeChanges(message: string): BadgeChange[] {
  const lines = message.split('\n');
  const changes: BadgeChange[] = new Array((lines.length - 1) >> 1);
  for (let i = 1, c = 0; i + 1 < lines.length; i += 2, c++) {
    changes[c] = { user: lines[i]!, ...decodeBadgeState(lines[i + 1]!) };
  }
  return changes;
}

/**
 * The changes of a published message, read where they lie for a gateway, which pushes only the
 * newest change of a user and conflates the rest away. Moving to a change costs a scan for its
 * line ends; its user's name is made only when asked, its epoch is compared in place, and its
 * time and counts are read only for a change the gateway keeps. Nothing of the reader points
 * into the message once the gateway has read what it keeps (a short counts text is a copy).
 */
export class PublishedChanges implements BadgeChangeReader {
  user = '';
  version = 0;
  /** NaN until the first change (a double from the start, as the codes are). */
  epochCode = NaN;
  /** Where the next change's user line begins, less one (its "\n"); -1 past the last. */
  private nextAt: number;
  private stateStart = 0;
  private epochEnd = 0;
  private versionEnd = 0;
  private end = 0;

  constructor(private readonly message: string) {
    this.nextAt = message.indexOf('\n');
  }

  next(): boolean {
    const message = this.message;
    const at = this.nextAt;
    if (at < 0) return false;
    const userEnd = message.indexOf('\n', at + 1);
    if (userEnd < 0) {
      this.nextAt = -1;
      return false;
    }
    let end = message.indexOf('\n', userEnd + 1);
    if (end < 0) end = message.length;
    const stateStart = userEnd + 1;
    const epochEnd = pipeBefore(message, stateStart, end);
    const versionEnd = pipeBefore(message, epochEnd + 1, end);
    this.user = message.slice(at + 1, userEnd);
    this.version = integerAt(message, epochEnd + 1, versionEnd);
    this.epochCode = epochCode(message, stateStart, epochEnd);
    this.stateStart = stateStart;
    this.epochEnd = epochEnd;
    this.versionEnd = versionEnd;
    this.end = end;
    this.nextAt = end < message.length ? end : -1;
    return true;
  }

  readEpoch(): string {
    return this.message.slice(this.stateStart, this.epochEnd);
  }

  hasEpoch(epoch: string): boolean {
    return (
      this.epochEnd - this.stateStart === epoch.length &&
      this.message.startsWith(epoch, this.stateStart)
    );
  }

  readComputedAt(): number {
    const from = Math.min(this.versionEnd + 1, this.end);
    return integerAt(this.message, from, pipeBefore(this.message, from, this.end));
  }

  readCountsText(): string {
    const from = Math.min(this.versionEnd + 1, this.end);
    const pipe = pipeBefore(this.message, from, this.end);
    return pipe < this.end ? this.message.slice(pipe + 1, this.end) : NO_COUNTS;
  }
}

/** A list of changes (the memory engine's, a re-read's) read as a published message is. */
export class ChangeList implements BadgeChangeReader {
  user = '';
  version = 0;
  /** NaN until the first change (a double from the start, as the codes are). */
  epochCode = NaN;
  private at = -1;
  private current: BadgeChange | undefined;

  constructor(private readonly changes: readonly BadgeChange[]) {}

  next(): boolean {
    const current = (this.current = this.changes[++this.at]);
    if (current === undefined) return false;
    this.user = current.user;
    this.version = current.version;
    this.epochCode = epochCode(current.epoch, 0, current.epoch.length);
    return true;
  }

  readEpoch(): string {
    return this.current!.epoch;
  }

  hasEpoch(epoch: string): boolean {
    return this.current!.epoch === epoch;
  }

  readComputedAt(): number {
    return this.current!.computedAt;
  }

  readCountsText(): string {
    return encodeCounts(this.current!.fields);
  }
}

/** Every change a reader has left, as objects (tests, and whoever wants them all). */
export function readChanges(reader: BadgeChangeReader): BadgeChange[] {
  const changes: BadgeChange[] = [];
  while (reader.next()) {
    changes.push({
      user: reader.user,
      epoch: reader.readEpoch(),
      version: reader.version,
      computedAt: reader.readComputedAt(),
      fields: decodeCounts(reader.readCountsText()),
    });
  }
  return changes;
}

/** The next "|" in text[from, end), else end. */
function pipeBefore(text: string, from: number, end: number): number {
  const at = text.indexOf('|', from);
  return at < 0 || at > end ? end : at;
}

/** Number(text.slice(from, to)) without the slice for a plain run of digits. */
function integerAt(text: string, from: number, to: number): number {
  if (to - from > 15 || to === from) return Number(text.slice(from, to));
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return Number(text.slice(from, to));
    value = value * 10 + digit;
  }
  return value;
}

/**
 * At most the bytes PackedStateWriter writes for a state of these counts, with an epoch of
 * `epochLength` code units and `computedAt` as the time.
 */
export function packedStateBound(
  epochLength: number,
  computedAt: string,
  fields: BadgeFields,
): number {
  let bound = MAX_UTF8_BYTES_PER_UNIT * (epochLength + computedAt.length) + MAX_NUMBER_LENGTH + 3;
  for (const name in fields) bound += MAX_UTF8_BYTES_PER_UNIT * name.length + MAX_NUMBER_LENGTH + 2;
  return bound;
}

/**
 * Packs states straight into a Buffer: measure() says how long the next one is (a RESP bulk
 * string needs its length first), write() writes it. In the usual case of a single field no
 * string or object is made; several fields are written as encodeCounts writes them. One writer
 * serves one state at a time.
 */
export class PackedStateWriter {
  private epoch = '';
  private version = 0;
  private computedAt = '';
  /** NO_COUNTS when there are none (or the only count is 0), else the only field's name. */
  private only = NO_COUNTS;
  private onlyValue = 0;
  /** encodeCounts' text when there are several fields, else null. */
  private several: string | null = null;

  /** The length of the state, in code units: its bytes when it is ASCII, as ids are. */
  measure(epoch: string, version: number, computedAt: string, fields: BadgeFields): number {
    this.epoch = epoch;
    this.version = version;
    this.computedAt = computedAt;
    const only = onlyField(fields);
    this.several = only === null ? encodeCounts(fields) : null;
    this.only = only ?? NO_COUNTS;
    this.onlyValue = only ? fields[only]! : 0;
    const countsLength =
      this.several !== null
        ? this.several.length
        : only
          ? only.length + 1 + numberLength(this.onlyValue)
          : 0;
    return epoch.length + numberLength(version) + computedAt.length + countsLength + 3;
  }

  /** Writes the state last measured; returns the position after it. */
  write(target: Buffer, pos: number): number {
    pos = writeText(target, pos, this.epoch);
    target[pos++] = PIPE;
    pos = writeNumber(target, pos, this.version);
    target[pos++] = PIPE;
    pos = writeText(target, pos, this.computedAt);
    target[pos++] = PIPE;
    if (this.several !== null) return writeText(target, pos, this.several);
    if (this.only === NO_COUNTS) return pos;
    pos = writeText(target, pos, this.only);
    target[pos++] = EQUALS;
    return writeNumber(target, pos, this.onlyValue);
  }
}

/**
 * How encodeCounts would write a state's counts, found without making a string or an object in
 * the usual case of a single field: NO_COUNTS when there are none (or its only count is 0), the
 * name of the only field, or null when there are several. Field names are never empty.
 */
function onlyField(fields: BadgeFields): string | null {
  let only: string | undefined;
  for (const name in fields) {
    if (only !== undefined) return null;
    only = name;
  }
  return only === undefined || fields[only] === 0 ? NO_COUNTS : only;
}

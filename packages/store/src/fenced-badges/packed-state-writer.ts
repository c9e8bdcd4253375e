import { NO_COUNTS, encodeCounts, type BadgeFields } from '@bubble/protocol';
import {
  MAX_NUMBER_LENGTH,
  MAX_UTF8_BYTES_PER_UNIT,
  numberLength,
  writeNumber,
  writeText,
} from '../bytes.js';

/**
 * The Redis engine's writer of the packed badge state (the format is @bubble/protocol's
 * badge-state: "<epoch>|<version>|<computedAt>|<counts>"), straight into a RESP buffer.
 */

const PIPE = 0x7c;
const EQUALS = 0x3d;

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

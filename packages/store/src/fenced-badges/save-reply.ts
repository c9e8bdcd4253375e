import type { FencedSaveResult, KnownBadge } from './fenced-badges.js';
import { ScriptStatus } from '../redis/script-status.js';

/**
 * saveBadges' answer (packages/store/lua/saveBadges-8.lua): -1 when the writer's fencing token
 * is older than the pool's; else one string, the number of changes on its first line, then a
 * line per write the script decided:
 *
 *   <index>|<changed>|<epoch>|<version>|<computedAt>|<counts>
 *
 * index counting from 1 in script order (the decided writes first), changed "1" or "0", then
 * the state stored now. Every other write stored the state proposed for it (the next version of
 * its writer's belief, or version 1 of the fresh epoch) and changed it, so the number of changes
 * is the undecided writes plus the decided lines marked changed.
 */

const LINE_END = '\n';
const SEPARATOR = '|';
const SEPARATOR_CODE = 0x7c;
const CHANGED = 0x31;
const UNCHANGED = 0x30;
const DIGIT_ZERO = 0x30;
const DIGIT_NINE = 0x39;
/** Digits of the largest index, version or count read (below 2^53). */
const MAX_DIGITS = 15;

/** A decided write, as its line says: 0 none, else changed or not. */
const NOT_DECIDED = 0;
const DECIDED_UNCHANGED = 1;
const DECIDED_CHANGED = 2;

export class SaveReplyError extends Error {
  constructor(problem: string, reply: unknown) {
    super(`saveBadges answered ${describe(reply)}: ${problem}`);
    this.name = 'SaveReplyError';
  }
}

/**
 * The save's result from the script's answer; the beliefs (in script order) are updated in
 * place, and stamps, in input order, made when `order` (script order → input index) is given.
 * `decided` writes come first in script order, and each must have its line. A reply that is not
 * such an answer throws SaveReplyError (an error reply is thrown as it is) before anything is
 * updated. A core's batches allocate nothing here beyond the decided lines' epochs: the lines
 * are read into scratch arrays reused from call to call (per-batch arrays, alive across the
 * sweep's round trips, were promoted and made V8 start full collections during sweeps).
 */
export function readSaveReply(
  reply: unknown,
  beliefs: readonly (KnownBadge | undefined)[],
  order: Int32Array | null,
  freshEpoch: string,
  decided: number,
): FencedSaveResult {
  if (reply === ScriptStatus.Refused) return { accepted: false, changed: 0 };
  if (reply instanceof Error) throw reply;
  if (typeof reply !== 'string') throw new SaveReplyError('not a string or -1', reply);
  const n = beliefs.length;
  const lines = scratchFor(n);
  let changed: number;
  try {
    changed = readLines(reply, n, decided, lines);
  } catch (error) {
    lines.kind.fill(NOT_DECIDED, 0, n);
    throw error;
  }
  const stamps: NonNullable<FencedSaveResult['stamps']> | null = order && new Array(n);
  for (let at = 0; at < n; at++) {
    const known = beliefs[at];
    const kind = lines.kind[at];
    let epoch: string;
    let version: number;
    if (kind === NOT_DECIDED) {
      // Stored as proposed: the next version of the known state, or the first of a fresh epoch.
      const next = known !== undefined && known.version > 0;
      epoch = next ? known.epoch : freshEpoch;
      version = next ? known.version + 1 : 1;
    } else {
      lines.kind[at] = NOT_DECIDED;
      epoch = reply.slice(lines.epochFrom[at], lines.epochTo[at]);
      version = lines.version[at]!;
    }
    if (stamps) stamps[order![at]!] = { epoch, version, changed: kind !== DECIDED_UNCHANGED };
    if (known !== undefined) {
      known.epoch = epoch;
      known.version = version;
    }
  }
  return stamps ? { accepted: true, changed, stamps } : { accepted: true, changed };
}

/** Checks every line and notes each decided write's; returns the number of changes. */
function readLines(reply: string, n: number, decided: number, lines: LineScratch): number {
  const firstEnd = lineEnd(reply, 0);
  const changes = readNumber(reply, 0, firstEnd);
  if (changes < 0) throw new SaveReplyError('no number of changes on its first line', reply);
  let decidedLines = 0;
  let changedLines = 0;
  for (let from = firstEnd + 1; from <= reply.length;) {
    const end = lineEnd(reply, from);
    const indexEnd = separator(reply, from, end);
    const at = indexEnd < 0 ? -1 : readNumber(reply, from, indexEnd) - 1;
    if (at < 0 || at >= n) {
      throw new SaveReplyError(`a line without the index of one of the ${n} writes`, reply);
    }
    if (lines.kind[at] !== NOT_DECIDED) throw new SaveReplyError(`write ${at + 1} twice`, reply);
    const flagAt = indexEnd + 1;
    const flag = reply.charCodeAt(flagAt);
    const flagEnded = flagAt + 1 < end && reply.charCodeAt(flagAt + 1) === SEPARATOR_CODE;
    if ((flag !== CHANGED && flag !== UNCHANGED) || (!flagEnded && flagAt + 1 < end)) {
      throw new SaveReplyError(`write ${at + 1} neither changed (1) nor not (0)`, reply);
    }
    const epochFrom = flagAt + 2;
    const epochTo = flagEnded ? separator(reply, epochFrom, end) : -1;
    const versionTo = epochTo < 0 ? -1 : separator(reply, epochTo + 1, end);
    const version = versionTo < 0 ? -1 : readNumber(reply, epochTo + 1, versionTo);
    // The time and the counts follow the version: a line cut short lacks their separator.
    if (epochTo <= epochFrom || version < 1 || separator(reply, versionTo + 1, end) < 0) {
      throw new SaveReplyError(`write ${at + 1} without a whole state`, reply);
    }
    lines.kind[at] = flag === CHANGED ? DECIDED_CHANGED : DECIDED_UNCHANGED;
    lines.epochFrom[at] = epochFrom;
    lines.epochTo[at] = epochTo;
    lines.version[at] = version;
    decidedLines++;
    if (flag === CHANGED) changedLines++;
    from = end + 1;
  }
  for (let at = 0; at < decided; at++) {
    if (lines.kind[at] === NOT_DECIDED) {
      throw new SaveReplyError(`no line for write ${at + 1}, which the script decides`, reply);
    }
  }
  const expected = n - decidedLines + changedLines;
  if (changes !== expected) {
    throw new SaveReplyError(`${changes} changes where its lines make ${expected}`, reply);
  }
  return changes;
}

function lineEnd(text: string, from: number): number {
  const end = text.indexOf(LINE_END, from);
  return end < 0 ? text.length : end;
}

/** The first separator in text[from, end), or -1 when the line has none from there. */
function separator(text: string, from: number, end: number): number {
  const at = text.indexOf(SEPARATOR, from);
  return at < end ? at : -1;
}

/** The decimal integer text[from, to) holds, or -1 when it is not one (or is too long). */
function readNumber(text: string, from: number, to: number): number {
  if (to <= from || to - from > MAX_DIGITS) return -1;
  let value = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code < DIGIT_ZERO || code > DIGIT_NINE) return -1;
    value = value * 10 + (code - DIGIT_ZERO);
  }
  return value;
}

function describe(reply: unknown): string {
  if (typeof reply === 'string') {
    return JSON.stringify(reply.length > 120 ? `${reply.slice(0, 120)}…` : reply);
  }
  if (reply === null) return 'null';
  if (Array.isArray(reply)) return `an array of ${reply.length}`;
  if (Buffer.isBuffer(reply)) return `a Buffer of ${reply.length} bytes`;
  return typeof reply === 'number' ? `the number ${reply}` : `a ${typeof reply}`;
}

interface LineScratch {
  /** Per write in script order: NOT_DECIDED, or how its line says it was decided. */
  kind: Uint8Array;
  epochFrom: Int32Array;
  epochTo: Int32Array;
  version: Float64Array;
}

/** Reused by every call; kind is all NOT_DECIDED between calls. */
let scratch: LineScratch = newScratch(1024);

function newScratch(size: number): LineScratch {
  return {
    kind: new Uint8Array(size),
    epochFrom: new Int32Array(size),
    epochTo: new Int32Array(size),
    version: new Float64Array(size),
  };
}

function scratchFor(n: number): LineScratch {
  if (scratch.kind.length < n) scratch = newScratch(Math.max(n, 2 * scratch.kind.length));
  return scratch;
}

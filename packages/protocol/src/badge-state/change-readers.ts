import { NO_COUNTS, decodeCounts, encodeCounts } from './counts.js';
import { epochCode } from './epoch.js';
import { decodeBadgeState } from './stored-state.js';

/** A user's new badge state, as published by the writer that stored it. */
export interface BadgeChange {
  user: string;
  epoch: string;
  version: number;
  fields: Record<string, number>;
  computedAt: number;
}

/**
 * The changes of one message to a gateway, read one at a time (next()), each field of the
 * current change on demand: a gateway decides from user, epoch and version whether a change is
 * newer than what it holds, and reads its time and counts only for those it keeps, so the
 * changes it conflates away cost no objects (PublishedChanges reads a message in place).
 */
export interface BadgeChangeReader {
  /** Moves to the next change, its user, version and epoch code read at once: false past the last. */
  next(): boolean;
  readonly user: string;
  readonly version: number;
  /** epochCode of the change's epoch: -1 when it is not one newEpoch makes. */
  readonly epochCode: number;
  /** Whether the current change's epoch is `epoch`, without making its string. */
  hasEpoch(epoch: string): boolean;
  readEpoch(): string;
  readComputedAt(): number;
  /** Its counts as stored: "name=value,…" sorted by name (encodeCounts). */
  readCountsText(): string;
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

import { displayTotal, makeBadge } from '../badge.js';
import { decodeFields } from './fields.js';

/**
 * What every badge frame of one user in one epoch begins with, up to the version: made once per
 * user and epoch by a gateway, which frames a user's states one after another.
 */
export class FrameStem {
  readonly text: string;
  /** Whether the stem is ASCII (ids are), so a frame's length in bytes is its length. */
  readonly ascii: boolean;

  constructor(
    readonly user: string,
    readonly epoch: string,
  ) {
    this.text =
      `{"type":"badge","badge":{"user":${JSON.stringify(user)},` +
      `"epoch":${JSON.stringify(epoch)},"version":`;
    this.ascii = isAscii(this.text);
  }
}

/**
 * `JSON.stringify({ type: 'badge', badge })` of the badge a published state stands for, written
 * straight from its stored counts ("name=value,…" sorted by name, docs/redis-keys.md). A gateway
 * frames almost every badge it is pushed and makes the object of few (polls, watched lists):
 * the usual badge, a feed and notices, costs one string here instead of the six objects of
 * decodeFields and makeBadge and their serialization. Conversations, red dots and counters,
 * when there are any, are made as decodeFields makes them, so the text is the same to the byte
 * (a property test compares them). `stem` is the user's, of the state's epoch.
 */
export function stemmedFrameText(
  stem: FrameStem,
  version: number,
  computedAt: number,
  counts: string,
  displayCap: number,
): string {
  let feed = 0;
  let notices = 0;
  let others: Record<string, number> | null = null;
  for (let at = 0; at < counts.length;) {
    let end = counts.indexOf(',', at);
    if (end < 0) end = counts.length;
    const equals = counts.indexOf('=', at);
    const value = Number(counts.slice(equals + 1, end));
    if (equals === at + 1 && counts.charCodeAt(at) === F) feed = value;
    else if (equals === at + 1 && counts.charCodeAt(at) === N) notices = value;
    else
      (others ??= Object.create(null) as Record<string, number>)[counts.slice(at, equals)] = value;
    at = end + 1;
  }
  if (others !== null) {
    others.f = feed;
    others.n = notices;
    const state = { epoch: stem.epoch, version };
    const badge = makeBadge(stem.user, decodeFields(others), state, computedAt, displayCap);
    return JSON.stringify({ type: 'badge', badge });
  }
  const total = feed + notices;
  // displayTotal writes digits, a sign, "+", NaN or Infinity: nothing JSON escapes.
  return (
    `${stem.text}${json(version)},"feed":${json(feed)},"notices":${json(notices)},` +
    `"conversations":{},"conversationsTotal":0,"reddots":[],"total":${json(total)},` +
    `"display":"${displayTotal(total, displayCap)}","computedAt":${timeText(computedAt)}}}`
  );
}

/** Whether every code unit of `text` is ASCII. */
export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

const F = 0x66;
const N = 0x6e;

/**
 * json(computedAt), remembered for the last time asked: the states a gateway frames one after
 * another mostly come from one sweep, which gave them all the same time, and a 13-digit number
 * is costly to write out.
 */
function timeText(computedAt: number): string {
  if (computedAt !== lastTime) {
    lastTime = computedAt;
    lastTimeText = json(computedAt);
  }
  return lastTimeText;
}

let lastTime = NaN;
let lastTimeText = 'null';

/** A number as JSON writes it (not finite: null). */
function json(value: number): string {
  return Number.isFinite(value) ? `${value}` : 'null';
}

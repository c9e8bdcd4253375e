/**
 * saveBadges' answer as readSaveReply reads it (packages/store/src/fenced-badges/save-reply.ts), against
 * a plain reading of the format written out from the script's header: on any reply, well-formed
 * or not, both give the same result or both refuse it. A refused reply throws a SaveReplyError
 * (an error reply is thrown as it is) and updates no belief.
 */
import fc from 'fast-check';
import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type {
  FencedSaveResult,
  KnownBadge,
} from '../../packages/store/src/fenced-badges/fenced-badges.js';
import {
  SaveReplyError,
  readSaveReply,
} from '../../packages/store/src/fenced-badges/save-reply.js';

const FRESH = 'fresh';
const DIGITS = /^\d{1,15}$/;

interface Batch {
  /** In script order: the decided writes (no belief) first. */
  beliefs: (KnownBadge | undefined)[];
  decided: number;
  /** Script order → input index, when stamps are asked for. */
  order: Int32Array | null;
}

/** What the reply means, read the obvious way; throws on anything the format does not allow. */
function reference(reply: string, batch: Batch): FencedSaveResult {
  const n = batch.beliefs.length;
  const [first, ...lines] = reply.split('\n');
  if (!DIGITS.test(first!)) throw new Error('no number of changes');
  const decidedAs = new Map<number, { changed: boolean; epoch: string; version: number }>();
  for (const line of lines) {
    const [index, flag, epoch, version, ...rest] = line.split('|');
    if (!DIGITS.test(index ?? '') || Number(index) < 1 || Number(index) > n)
      throw new Error('index');
    if (decidedAs.has(Number(index) - 1)) throw new Error('twice');
    if (flag !== '0' && flag !== '1') throw new Error('flag');
    if (!epoch || !DIGITS.test(version ?? '') || Number(version) < 1) throw new Error('state');
    if (rest.length < 2) throw new Error('no time and counts');
    decidedAs.set(Number(index) - 1, { changed: flag === '1', epoch, version: Number(version) });
  }
  for (let at = 0; at < batch.decided; at++) if (!decidedAs.has(at)) throw new Error('missing');
  const changedLines = [...decidedAs.values()].filter((line) => line.changed).length;
  if (Number(first) !== n - decidedAs.size + changedLines) throw new Error('changes');
  const stamps: NonNullable<FencedSaveResult['stamps']> = new Array(n);
  batch.beliefs.forEach((known, at) => {
    const line = decidedAs.get(at);
    const next = known !== undefined && known.version > 0;
    const stored = line ?? {
      changed: true,
      epoch: next ? known.epoch : FRESH,
      version: next ? known.version + 1 : 1,
    };
    if (batch.order) stamps[batch.order[at]!] = stored;
    if (known) {
      known.epoch = stored.epoch;
      known.version = stored.version;
    }
  });
  const changed = Number(first);
  return batch.order ? { accepted: true, changed, stamps } : { accepted: true, changed };
}

function copy(batch: Batch): Batch {
  return { ...batch, beliefs: batch.beliefs.map((known) => known && { ...known }) };
}

type Outcome = { result: FencedSaveResult; beliefs: Batch['beliefs'] } | 'refused';

function outcome(
  read: (batch: Batch) => FencedSaveResult,
  batch: Batch,
  refusal: new (...args: never[]) => Error = Error,
): Outcome {
  const mine = copy(batch);
  try {
    return { result: read(mine), beliefs: mine.beliefs };
  } catch (error) {
    expect(error).toBeInstanceOf(refusal);
    // A refusal leaves every belief as it was.
    expect(mine.beliefs).toEqual(batch.beliefs);
    return 'refused';
  }
}

function read(reply: unknown, batch: Batch): FencedSaveResult {
  return readSaveReply(reply, batch.beliefs, batch.order, FRESH, batch.decided);
}

const belief = fc.record({
  epoch: fc.constantFrom('e1', 'e2', 'old'),
  version: fc.constantFrom(-1, 0, 1, 7),
});
const batchArb: fc.Arbitrary<Batch> = fc
  .tuple(fc.nat({ max: 4 }), fc.array(belief, { maxLength: 5 }), fc.boolean())
  .filter(([decided, blind]) => decided + blind.length > 0)
  .chain(([decided, blind, withStamps]) => {
    const n = decided + blind.length;
    return fc.shuffledSubarray([...Array(n).keys()], { minLength: n }).map((perm) => ({
      beliefs: [...Array<undefined>(decided).fill(undefined), ...blind],
      decided,
      order: withStamps ? Int32Array.from(perm) : null,
    }));
  });

/** A well-formed answer: every decided write and some blind ones get a line, in any order. */
function answerArb(batch: Batch): fc.Arbitrary<string> {
  const n = batch.beliefs.length;
  return fc
    .tuple(
      fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      fc.array(fc.nat({ max: 20 }), { minLength: n, maxLength: n }),
      fc.shuffledSubarray([...Array(n).keys()], { minLength: n }),
    )
    .map(([lined, changed, versions, lineOrder]) => {
      const lines = lineOrder
        .filter((at) => at < batch.decided || lined[at])
        .map((at) => `${at + 1}|${changed[at] ? 1 : 0}|s${at}|${versions[at]! + 1}|99|f=${at}`);
      const changedLines = lines.filter((line) => line.split('|')[1] === '1').length;
      return [String(n - lines.length + changedLines), ...lines].join('\n');
    });
}

/** An answer bent out of shape: cut, a character changed or dropped, a line doubled. */
function damagedArb(answer: string): fc.Arbitrary<string> {
  const position = fc.nat({ max: answer.length });
  const char = fc.constantFrom('0', '1', '2', '9', '|', '\n', '', 'x', '-', ' ', '\r');
  return fc.oneof(
    position.map((at) => answer.slice(0, at)),
    fc.tuple(position, char).map(([at, c]) => answer.slice(0, at) + c + answer.slice(at + 1)),
    fc.tuple(position, char).map(([at, c]) => answer.slice(0, at) + c + answer.slice(at)),
    fc.constant(answer + '\n'),
    fc.constant(answer + '\n' + answer.split('\n').at(-1)),
  );
}

describe('saveBadges reply', () => {
  it('reads every well-formed answer as the plain reading does', () => {
    fc.assert(
      fc.property(
        batchArb.chain((batch) => fc.tuple(fc.constant(batch), answerArb(batch))),
        ([batch, answer]) => {
          const mine = outcome((b) => read(answer, b), batch, SaveReplyError);
          expect(mine).not.toBe('refused');
          expect(mine).toEqual(outcome((b) => reference(answer, b), batch));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('refuses what the plain reading refuses, and reads the rest alike', () => {
    fc.assert(
      fc.property(
        batchArb.chain((batch) => fc.tuple(fc.constant(batch), answerArb(batch).chain(damagedArb))),
        ([batch, reply]) => {
          expect(outcome((b) => read(reply, b), batch, SaveReplyError)).toEqual(
            outcome((b) => reference(reply, b), batch),
          );
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('reads a refused fence, and a batch nobody decided', () => {
    const batch: Batch = { beliefs: [{ epoch: 'e', version: 3 }], decided: 0, order: null };
    expect(read(-1, batch)).toEqual({ accepted: false, changed: 0 });
    expect(batch.beliefs[0]).toEqual({ epoch: 'e', version: 3 });
    expect(read('1', batch)).toEqual({ accepted: true, changed: 1 });
    expect(batch.beliefs[0]).toEqual({ epoch: 'e', version: 4 });
  });

  it('throws a clear error for a reply of the wrong type', () => {
    const batch: Batch = { beliefs: [undefined], decided: 1, order: null };
    for (const reply of [0, 1, -2, null, undefined, [], ['1'], { changed: 1 }, Buffer.from('1')]) {
      expect(() => read(reply, batch)).toThrow(SaveReplyError);
    }
    expect(() => read([], batch)).toThrow('saveBadges answered an array of 0: not a string or -1');
    expect(() => read(null, batch)).toThrow('saveBadges answered null');
  });

  it('throws an error reply as it is', () => {
    const error = new ReplyError('ERR Error running script: boom');
    expect(() => read(error, { beliefs: [undefined], decided: 1, order: null })).toThrow(error);
  });

  it('names what is wrong with a malformed answer', () => {
    const one: Batch = { beliefs: [undefined], decided: 1, order: null };
    const cases: [string, string][] = [
      ['', 'no number of changes on its first line'],
      ['x', 'no number of changes'],
      ['1\n', 'a line without the index of one of the 1 writes'],
      ['1\n2|1|e|1|5|', 'a line without the index of one of the 1 writes'],
      ['1\n0|1|e|1|5|', 'a line without the index'],
      ['2\n1|1|e|1|5|\n1|1|e|1|5|', 'write 1 twice'],
      ['1\n1|2|e|1|5|', 'write 1 neither changed (1) nor not (0)'],
      ['1\n1|10|e|1|5|', 'neither changed (1) nor not (0)'],
      ['1\n1|1||1|5|', 'write 1 without a whole state'],
      ['1\n1|1|e|0|5|', 'without a whole state'],
      ['1\n1|1|e|x|5|', 'without a whole state'],
      ['1\n1|1|e|1|5', 'without a whole state'],
      ['1\n1|1|e|1', 'without a whole state'],
      ['1\n1|1|e', 'without a whole state'],
      ['1\n1|1', 'without a whole state'],
      ['1\n1|', 'neither changed (1) nor not (0)'],
      ['1\n1', 'a line without the index'],
      ['1', 'no line for write 1, which the script decides'],
      ['0\n1|1|e|1|5|', '0 changes where its lines make 1'],
    ];
    for (const [reply, problem] of cases) {
      expect(() => read(reply, one), JSON.stringify(reply)).toThrow(problem);
    }
    // Long replies are cut short in the message.
    expect(() => read(`x${'9'.repeat(500)}`, one)).toThrow(/…": no number/);
  });

  it('leaves nothing behind from a refused reply for the next call', () => {
    const batch: Batch = {
      beliefs: [undefined, { epoch: 'e', version: 2 }],
      decided: 1,
      order: null,
    };
    // Write 2's line is read before the bad one is met.
    expect(() => read('1\n2|0|s|9|5|\n1|7|e|1|5|', batch)).toThrow(SaveReplyError);
    expect(read('2\n1|1|s|1|5|', batch)).toEqual({ accepted: true, changed: 2 });
    expect(batch.beliefs[1]).toEqual({ epoch: 'e', version: 3 });
  });

  it('reads a large batch', () => {
    const n = 5000;
    const beliefs: Batch['beliefs'] = Array.from({ length: n }, (_, i) =>
      i < 100 ? undefined : { epoch: 'b', version: i },
    );
    const lines = Array.from({ length: 100 }, (_, at) => `${at + 1}|1|d${at}|1|5|f=1`);
    const batch: Batch = { beliefs, decided: 100, order: Int32Array.from(beliefs.keys()) };
    const result = read([String(n), ...lines].join('\n'), batch);
    expect(result.changed).toBe(n);
    expect(result.stamps![0]).toEqual({ epoch: 'd0', version: 1, changed: true });
    expect(result.stamps![n - 1]).toEqual({ epoch: 'b', version: n, changed: true });
  });
});

/**
 * A gateway reads its routed messages in place (PublishedChanges): read change by change they
 * must be what decodeChanges makes of the same message, and a list of changes (ChangeList) must
 * read as the same message would.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ChangeList,
  PublishedChanges,
  decodeChanges,
  encodeCounts,
  epochCode,
  readChanges,
} from '@bubble/protocol';

const state = fc.record({
  user: fc.stringMatching(/^[A-Za-z0-9_:@-]{1,8}$/),
  epoch: fc.oneof(fc.stringMatching(/^[A-Za-z0-9]{1,8}$/), fc.stringMatching(/^[A-Za-z0-9_-]{8}$/)),
  version: fc.oneof(fc.nat(), fc.maxSafeNat()),
  computedAt: fc.oneof(fc.nat(), fc.maxSafeNat()),
  fields: fc.dictionary(
    fc.constantFrom('f', 'n:1', 'c:x', 'r:d'),
    fc.integer({ min: 1, max: 999 }),
  ),
});

type State = typeof state extends fc.Arbitrary<infer T> ? T : never;

function messageOf(states: readonly State[], trailing: boolean): string {
  return (
    [
      '- 1',
      ...states.flatMap((s) => [
        s.user,
        `${s.epoch}|${s.version}|${s.computedAt}|${encodeCounts(s.fields)}`,
      ]),
    ].join('\n') + (trailing ? '\n' : '')
  );
}

describe('PublishedChanges', () => {
  it('reads as decodeChanges on every message', () => {
    fc.assert(
      fc.property(fc.array(state, { maxLength: 6 }), fc.boolean(), (states, trailing) => {
        const message = messageOf(states, trailing);
        expect(readChanges(new PublishedChanges(message))).toEqual(decodeChanges(message));
      }),
    );
  });

  it('compares each epoch in place, and reads fields in any order, any number of times', () => {
    fc.assert(
      fc.property(
        fc.array(state, { minLength: 1, maxLength: 6 }),
        fc.stringMatching(/^[A-Za-z0-9]{0,9}$/),
        (states, other) => {
          const changes = new PublishedChanges(messageOf(states, false));
          for (const s of states) {
            expect(changes.next()).toBe(true);
            expect(changes.hasEpoch(s.epoch)).toBe(true);
            expect(changes.hasEpoch(other)).toBe(other === s.epoch);
            expect(changes.hasEpoch(s.epoch.slice(0, -1))).toBe(false);
            expect(changes.hasEpoch(`${s.epoch}x`)).toBe(false);
            expect(changes.readCountsText()).toBe(encodeCounts(s.fields));
            expect(changes.version).toBe(s.version);
            expect(changes.readComputedAt()).toBe(s.computedAt);
            expect(changes.user).toBe(s.user);
            expect(changes.version).toBe(s.version);
            expect(changes.readEpoch()).toBe(s.epoch);
            expect(changes.epochCode).toBe(epochCode(s.epoch, 0, s.epoch.length));
          }
          expect(changes.next()).toBe(false);
          expect(changes.next()).toBe(false);
        },
      ),
    );
  });

  it('a message of no change, or cut short, reads no change past its last whole one', () => {
    expect(readChanges(new PublishedChanges('-'))).toEqual([]);
    expect(readChanges(new PublishedChanges('- 3\n'))).toEqual([]);
    expect(readChanges(new PublishedChanges('- 3\nu1'))).toEqual([]);
    expect(readChanges(new PublishedChanges('- 3\nu1\nep|2|9|f=1\nu2'))).toEqual([
      { user: 'u1', epoch: 'ep', version: 2, computedAt: 9, fields: { f: 1 } },
    ]);
  });
});

describe('ChangeList', () => {
  it('reads a list of changes as PublishedChanges reads their message', () => {
    fc.assert(
      fc.property(fc.array(state, { maxLength: 6 }), (states) => {
        const list = new ChangeList(states.map((s) => ({ ...s })));
        expect(readChanges(list)).toEqual(decodeChanges(messageOf(states, false)));
        const codes = new ChangeList(states.map((s) => ({ ...s })));
        for (const s of states) {
          expect(codes.next()).toBe(true);
          expect(codes.epochCode).toBe(epochCode(s.epoch, 0, s.epoch.length));
        }
      }),
    );
  });
});

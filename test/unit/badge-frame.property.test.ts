/**
 * A gateway writes a pushed state's frame straight from its stored counts (stemmedFrameText): it
 * must be, to the byte, the JSON of the badge badgeOf makes of the same state, whatever the
 * counts (feed and notices only, the fast path, or conversations, muted ones, red dots and
 * counters, with ids JSON sorts before others), and through a message read by PublishedChanges.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FrameStem,
  PublishedChanges,
  decodeCounts,
  decodeFields,
  encodeCounts,
  makeBadge,
  stemmedFrameText,
} from '@bubble/protocol';

const id = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_-]{1,6}$/),
  fc.nat({ max: 20 }).map(String),
  fc.constantFrom('0', '01', '10', '9', '4294967295', '__proto__', 'f', 'n'),
);
const fieldName = fc.oneof(
  fc.constantFrom('f', 'n'),
  fc.tuple(fc.constantFrom('c:', 'm:', 'r:', 'k:'), id).map(([prefix, name]) => prefix + name),
);
const fields = fc.dictionary(fieldName, fc.integer({ min: -3, max: 2_000_000 }), {
  maxKeys: 8,
});
const state = fc.record({
  user: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_:@.-]{1,12}$/), fc.string({ maxLength: 6 })),
  epoch: fc.stringMatching(/^[A-Za-z0-9]{1,10}$/),
  version: fc.nat(),
  computedAt: fc.nat(),
});
const cap = fc.oneof(fc.constant(99), fc.nat({ max: 200 }));

function expected(
  s: { user: string; epoch: string; version: number; computedAt: number },
  stored: Record<string, number>,
  displayCap: number,
): string {
  const badge = makeBadge(s.user, decodeFields(stored), s, s.computedAt, displayCap);
  return JSON.stringify({ type: 'badge', badge });
}

describe('stemmedFrameText', () => {
  it('is the JSON of badgeOf for every stored state', () => {
    fc.assert(
      fc.property(state, fields, cap, (s, f, displayCap) => {
        const counts = encodeCounts(f);
        const stem = new FrameStem(s.user, s.epoch);
        expect(stemmedFrameText(stem, s.version, s.computedAt, counts, displayCap)).toBe(
          expected(s, decodeCounts(counts), displayCap),
        );
      }),
      { numRuns: 2_000 },
    );
  });

  it("is the same through a published message read in place, from the user's stem", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(state, fields), { maxLength: 5 }),
        cap,
        (states, displayCap) => {
          const message = [
            '- 1',
            ...states.flatMap(([s, f]) => [
              s.user.replace(/\n/g, ''),
              `${s.epoch}|${s.version}|${s.computedAt}|${encodeCounts(f)}`,
            ]),
          ].join('\n');
          const changes = new PublishedChanges(message);
          let read = 0;
          while (changes.next()) {
            const [s, f] = states[read++]!;
            const stem = new FrameStem(changes.user, changes.readEpoch());
            const { version } = changes;
            const computedAt = changes.readComputedAt();
            const countsText = changes.readCountsText();
            const state = { ...s, user: s.user.replace(/\n/g, '') };
            expect(stemmedFrameText(stem, version, computedAt, countsText, displayCap)).toBe(
              expected(state, decodeCounts(encodeCounts(f)), displayCap),
            );
          }
          expect(read).toBe(states.length);
        },
      ),
    );
  });

  it('writes the usual badge without conversations, red dots or counters', () => {
    const frame = stemmedFrameText(new FrameStem('u1', 'ep'), 3, 7, 'f=120,n=2', 99);
    expect(JSON.parse(frame)).toEqual({
      type: 'badge',
      badge: {
        user: 'u1',
        epoch: 'ep',
        version: 3,
        feed: 120,
        notices: 2,
        conversations: {},
        conversationsTotal: 0,
        reddots: [],
        total: 122,
        display: '99+',
        computedAt: 7,
      },
    });
  });
});

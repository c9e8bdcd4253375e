/**
 * PushRing against its definition: the pending slots are served in slot order from the cursor,
 * going round, each once per mark; released slots are given again and serve nothing of their
 * old holder; every pending slot is served within one round (no slot waits behind a later mark
 * of a slot it has already passed).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PushRing } from '../../packages/gateway/src/live/push-ring.js';

type Op =
  | { kind: 'claim' }
  | { kind: 'release'; pick: number }
  | { kind: 'mark'; pick: number }
  | { kind: 'unmark'; pick: number }
  | { kind: 'next' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.constant({ kind: 'claim' as const }),
  fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('mark' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('unmark' as const), pick: fc.nat() }),
  fc.constant({ kind: 'next' as const }),
);

/** The definition: a set of pending slots, a cursor, and the slots' holders. */
class Model {
  holders = new Map<number, string>();
  pending = new Set<number>();
  cursor = 0;
  free: number[] = [];
  size = 0;

  next(): string | undefined {
    if (this.pending.size === 0) return undefined;
    const ordered = [...this.pending].sort((a, b) => a - b);
    const slot = ordered.find((s) => s >= this.cursor) ?? ordered[0]!;
    this.pending.delete(slot);
    // Past the last slot is as at the first: the ring's wrap at its capacity is the same.
    this.cursor = slot + 1;
    return this.holders.get(slot);
  }
}

describe('PushRing', () => {
  it('serves pending slots in slot order from a cursor going round, as the model does', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), fc.integer({ min: 0, max: 2 }), (ops, warm) => {
        const ring = new PushRing<string>();
        const model = new Model();
        let made = 0;
        // Enough claims up front to cross a word, and sometimes to grow the bit set.
        const claims = [20, 70, 1100][warm]!;
        const live: number[] = [];
        const claim = () => {
          const holder = `h${made++}`;
          const slot = ring.claim(holder);
          const expected = model.free.pop() ?? model.size++;
          expect(slot).toBe(expected);
          model.holders.set(slot, holder);
          live.push(slot);
        };
        for (let i = 0; i < claims; i++) claim();
        for (const step of ops) {
          if (step.kind === 'claim') claim();
          else if (step.kind === 'next') expect(ring.next()).toBe(model.next());
          else if (live.length > 0) {
            const at = step.pick % live.length;
            const slot = live[at]!;
            if (step.kind === 'release') {
              ring.release(slot);
              model.pending.delete(slot);
              model.holders.delete(slot);
              model.free.push(slot);
              live.splice(at, 1);
            } else if (step.kind === 'mark') {
              expect(ring.mark(slot)).toBe(!model.pending.has(slot));
              model.pending.add(slot);
            } else {
              expect(ring.unmark(slot)).toBe(model.pending.has(slot));
              model.pending.delete(slot);
            }
          }
          expect(ring.pending).toBe(model.pending.size);
        }
        // Drained, each pending slot comes out once, then nothing.
        const left = model.pending.size;
        for (let i = 0; i < left; i++) expect(ring.next()).toBe(model.next());
        expect(ring.next()).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('serves a slot marked behind the cursor only after every slot ahead of it', () => {
    const ring = new PushRing<number>();
    for (let i = 0; i < 100; i++) ring.claim(i);
    for (const slot of [10, 50, 90]) ring.mark(slot);
    expect(ring.next()).toBe(10);
    ring.mark(5); // behind the cursor
    ring.mark(60);
    expect([ring.next(), ring.next(), ring.next(), ring.next()]).toEqual([50, 60, 90, 5]);
    expect(ring.next()).toBeUndefined();
  });
});

/**
 * The one seeded random (mulberry32, packages/protocol/src/random.ts). Benches, the simulator and
 * the random workloads of the tests replay by seed, so its sequence is pinned: these values are
 * the ones the four copies it replaced drew.
 */
import { mulberry32 } from '@bubble/protocol';
import { describe, expect, it } from 'vitest';

const draw = (seed: number, n: number): number[] => {
  const random = mulberry32(seed);
  return Array.from({ length: n }, () => random());
};

describe('mulberry32', () => {
  it('draws the same sequence as before for the seeds the tests and benches use', () => {
    expect(draw(1, 3)).toEqual([0.6270739405881613, 0.002735721180215478, 0.5274470399599522]);
    expect(draw(42, 3)).toEqual([0.6011037519201636, 0.44829055899754167, 0.8524657934904099]);
    expect(draw(4242, 3)).toEqual([0.5467061335220933, 0.27860878920182586, 0.9312369171530008]);
    expect(draw(0x5eed ^ 7, 3)).toEqual([
      0.16731136315502226, 0.3477474164683372, 0.2473489698022604,
    ]);
  });

  it('stays in [0, 1) and takes any number as a seed (its low 32 bits)', () => {
    const values = [...draw(0, 1000), ...draw(-1, 1000), ...draw(2 ** 40 + 3, 1000)];
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
    expect(draw(2 ** 32 + 5, 5)).toEqual(draw(5, 5));
  });
});

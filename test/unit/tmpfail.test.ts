import { expect, test } from 'vitest';
test('fails', () => { expect(1).toBe(2); });
test('passes', () => { expect(1).toBe(1); });

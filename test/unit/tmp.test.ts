import { expect, test } from 'vitest';
import { uniquePrefix, waitFor } from '@bubble/test-utils';
test('tmp', async () => {
  expect(uniquePrefix('a-b')).toMatch(/^[A-Za-z0-9_]+$/);
  expect(await waitFor(() => 5)).toBe(5);
  await expect(waitFor(() => 0, { timeoutMs: 100, message: 'nope' })).rejects.toThrow(/nope.*last value: 0/);
  await expect(waitFor(() => { throw new Error('boom'); }, { timeoutMs: 100 })).rejects.toThrow(/boom/);
  await expect(waitFor(() => new Promise(() => {}), { timeoutMs: 100 })).rejects.toThrow(/not settled/);
});

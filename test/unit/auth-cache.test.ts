/**
 * The gateway remembers tokens it verified, so a poller is not re-verified on every request;
 * a remembered token must still stop working when it expires, and only that exact token counts.
 */
import { Authenticator, mintToken } from '@bubble/gateway';
import { afterEach, describe, expect, it, vi } from 'vitest';

const SECRET = 'unit-test-secret-0123456789';

describe('Authenticator: verified tokens', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a remembered token is refused once expired (past the 5 s tolerance)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const auth = new Authenticator({ jwtSecret: SECRET, apiKey: 'k' });
    const token = await mintToken({ secret: SECRET, user: 'alice', ttlSeconds: 10 });
    expect(await auth.verifyToken(token)).toBe('alice');
    vi.setSystemTime(Date.now() + 14_000);
    expect(await auth.verifyToken(token)).toBe('alice');
    vi.setSystemTime(Date.now() + 2_000);
    await expect(auth.verifyToken(token)).rejects.toMatchObject({ code: 'UB_ERR_UNAUTHORIZED' });
  });

  it('a token signed with another secret is refused even after a valid one was remembered', async () => {
    const auth = new Authenticator({ jwtSecret: SECRET, apiKey: 'k' });
    const good = await mintToken({ secret: SECRET, user: 'alice', ttlSeconds: 60 });
    const forged = await mintToken({
      secret: 'another-secret-0123456789',
      user: 'alice',
      ttlSeconds: 60,
    });
    expect(await auth.verifyToken(good)).toBe('alice');
    await expect(auth.verifyToken(forged)).rejects.toMatchObject({ code: 'UB_ERR_UNAUTHORIZED' });
  });
});

/**
 * The feed digest's configuration (docs/api.md, "The feed on phones"): `feed` is a webhook
 * source, the BUBBLE_DIGEST_* defaults, and a bad value refused with the variable's name.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../packages/cli/src/config.js';

describe('feed digest configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.BUBBLE_DIGEST_DAYS).toBe(3);
    expect(config.BUBBLE_DIGEST_INTERVAL_MS).toBe(900_000);
    expect(config.BUBBLE_DIGEST_RATE).toBe(2_000);
  });

  it('takes feed as a webhook source', () => {
    const config = loadConfig({ BUBBLE_WEBHOOK_SOURCES: 'conversations,feed' });
    expect(config.BUBBLE_WEBHOOK_SOURCES).toEqual(['conversations', 'feed']);
  });

  it.each([
    [{ BUBBLE_DIGEST_DAYS: '0' }, /BUBBLE_DIGEST_DAYS/],
    [{ BUBBLE_DIGEST_DAYS: '1.5' }, /BUBBLE_DIGEST_DAYS/],
    [{ BUBBLE_DIGEST_DAYS: '31' }, /BUBBLE_DIGEST_DAYS: must be at most BUBBLE_INACTIVE_DAYS/],
    [{ BUBBLE_DIGEST_INTERVAL_MS: '999' }, /BUBBLE_DIGEST_INTERVAL_MS/],
    [{ BUBBLE_DIGEST_INTERVAL_MS: 'often' }, /BUBBLE_DIGEST_INTERVAL_MS/],
    [{ BUBBLE_DIGEST_RATE: '0' }, /BUBBLE_DIGEST_RATE/],
    [{ BUBBLE_DIGEST_RATE: '1000001' }, /BUBBLE_DIGEST_RATE/],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('accepts a window up to BUBBLE_INACTIVE_DAYS', () => {
    const config = loadConfig({ BUBBLE_DIGEST_DAYS: '7', BUBBLE_INACTIVE_DAYS: '7' });
    expect(config.BUBBLE_DIGEST_DAYS).toBe(7);
  });
});

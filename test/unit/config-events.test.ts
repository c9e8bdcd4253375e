/**
 * The configuration of the ingest stream and of offline delivery: defaults as docs/api.md
 * states them, and a bad value or combination refused with the variable's name.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../packages/cli/src/config.js';

const SECRET = 'w'.repeat(32);

describe('ingest stream and webhook configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.BUBBLE_INGEST_STREAM).toBe(true);
    expect(config.BUBBLE_INGEST_PARTITIONS).toBe(1);
    expect(config.BUBBLE_INGEST_CLAIM_MS).toBe(30_000);
    expect(config.BUBBLE_INGEST_MAX_DELIVERIES).toBe(5);
    expect(config.BUBBLE_INGEST_READ_COUNT).toBe(1000);
    expect(config.BUBBLE_WEBHOOK_URL).toBeUndefined();
    expect(config.BUBBLE_WEBHOOK_SOURCES).toEqual(['conversations', 'counters', 'notices']);
    expect(config.BUBBLE_WEBHOOK_TIMEOUT_MS).toBe(5_000);
    expect(config.BUBBLE_WEBHOOK_MAX_ATTEMPTS).toBe(8);
    expect(config.BUBBLE_WEBHOOK_MIN_INTERVAL_MS).toBe(2_000);
  });

  it('parses the sources, de-duplicated', () => {
    const config = loadConfig({ BUBBLE_WEBHOOK_SOURCES: ' notices , reddots,notices' });
    expect(config.BUBBLE_WEBHOOK_SOURCES).toEqual(['notices', 'reddots']);
  });

  it.each([
    [{ BUBBLE_WEBHOOK_SOURCES: 'notices,likes' }, /BUBBLE_WEBHOOK_SOURCES: unknown source "likes"/],
    [{ BUBBLE_WEBHOOK_URL: 'ftp://push.example' }, /BUBBLE_WEBHOOK_URL: must be an http\(s\) URL/],
    [{ BUBBLE_WEBHOOK_URL: 'https://push.example/hook' }, /BUBBLE_WEBHOOK_SECRET: required/],
    [
      { BUBBLE_WEBHOOK_URL: 'https://push.example/hook', BUBBLE_WEBHOOK_SECRET: 'short' },
      /BUBBLE_WEBHOOK_SECRET: must be at least 32 bytes/,
    ],
    [{ BUBBLE_INGEST_PARTITIONS: '0' }, /BUBBLE_INGEST_PARTITIONS/],
    [{ BUBBLE_INGEST_MAX_DELIVERIES: 'many' }, /BUBBLE_INGEST_MAX_DELIVERIES/],
    [{ BUBBLE_INGEST_READ_COUNT: '0' }, /BUBBLE_INGEST_READ_COUNT/],
    [{ BUBBLE_INGEST_READ_COUNT: '10001' }, /BUBBLE_INGEST_READ_COUNT/],
    [
      { BUBBLE_WEBHOOK_RETRY_BASE_MS: '5000', BUBBLE_WEBHOOK_RETRY_MAX_MS: '1000' },
      /BUBBLE_WEBHOOK_RETRY_MAX_MS: must be at least BUBBLE_WEBHOOK_RETRY_BASE_MS/,
    ],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('accepts a complete webhook configuration', () => {
    const config = loadConfig({
      BUBBLE_WEBHOOK_URL: 'https://push.example/hook',
      BUBBLE_WEBHOOK_SECRET: SECRET,
    });
    expect(config.BUBBLE_WEBHOOK_URL).toBe('https://push.example/hook');
  });
});

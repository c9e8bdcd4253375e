/**
 * BUBBLE_COUNTER_KINDS (docs/api.md, configuration): the default kinds, a list parsed and
 * de-duplicated, and a bad value refused with the variable's name.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../packages/cli/src/config.js';

describe('interaction counter configuration', () => {
  it('defaults to mention, comment and like', () => {
    expect(loadConfig({}).BUBBLE_COUNTER_KINDS).toEqual(['mention', 'comment', 'like']);
  });

  it('parses the kinds, trimmed and de-duplicated', () => {
    const config = loadConfig({ BUBBLE_COUNTER_KINDS: ' like, reply ,like,follow.request' });
    expect(config.BUBBLE_COUNTER_KINDS).toEqual(['like', 'reply', 'follow.request']);
  });

  it.each([
    [{ BUBBLE_COUNTER_KINDS: ' , ' }, /BUBBLE_COUNTER_KINDS: names no kind/],
    [{ BUBBLE_COUNTER_KINDS: 'like,re ply' }, /BUBBLE_COUNTER_KINDS: kind "re ply" must be/],
    [{ BUBBLE_COUNTER_KINDS: `like,${'k'.repeat(65)}` }, /BUBBLE_COUNTER_KINDS: kind "k+" must be/],
    [{ BUBBLE_COUNTER_KINDS: 'mention,{tag}' }, /BUBBLE_COUNTER_KINDS: kind "\{tag\}" must be/],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

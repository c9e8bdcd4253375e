/**
 * Ids that are JavaScript's own property names are ordinary names (issue 19), in the id spaces
 * the all-sources model does not draw from: topics and the users and authors around them, the
 * conversation list (ids and the keys of a preview), explain, and counter ids. Every name of
 * Object.prototype that is a valid id, on both engines, through BadgeService.
 * The model test (test/property/all-sources.property.test.ts) covers notices, red dots,
 * conversations and counters with these names against the definition.
 */
import { expect, it } from 'vitest';
import { describeEachEngine, manualService } from '../support/engines.js';

const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype'];

describeEachEngine('ids named like Object.prototype', (ctx) => {
  it('topics, authors and users with those names count as any other', async () => {
    const { service, clock } = manualService(ctx().store);
    for (const [i, user] of NAMES.entries()) {
      const topic = NAMES[(i + 1) % NAMES.length]!;
      const author = NAMES[(i + 2) % NAMES.length]!;
      await service.followTopic(user, topic);
      await service.follow(user, author);
      expect(await service.listTopics(user)).toEqual([topic]);
      expect(await service.listFollows(user)).toEqual([author]);
    }
    // One post per name, carrying the next name as its topic.
    await service.ingestPosts(
      NAMES.map((author, i) => ({
        author,
        id: author,
        ts: clock.now() - 1000,
        topics: [NAMES[(i + 1) % NAMES.length]!],
      })),
    );
    for (const [i, user] of NAMES.entries()) {
      // By author: the post of NAMES[i+2]; by topic NAMES[i+1]: the post of NAMES[i].
      const badge = await service.badge(user);
      expect({ user, feed: badge.feed }).toEqual({ user, feed: 2 });
      const explained = await service.explain(user);
      expect(JSON.stringify(explained)).toContain(JSON.stringify(NAMES[(i + 1) % NAMES.length]));
    }
  });

  it('the conversation list keeps those ids and the keys of a preview', async () => {
    const { service, clock } = manualService(ctx().store);
    const preview = JSON.parse(
      '{"__proto__":{"polluted":true},"constructor":"c","toString":1,"text":"hi"}',
    ) as Record<string, unknown>;
    for (const [i, conversation] of NAMES.entries()) {
      await service.replaceMembers(conversation, ['__proto__', 'hasOwnProperty']);
      await service.ingestMessages(conversation, [
        { seq: 1, from: 'hasOwnProperty', ts: clock.now() - 1000 + i, preview },
      ]);
    }
    const list = await service.conversationList('__proto__', 100);
    expect(list.map((item) => item.id).sort()).toEqual([...NAMES].sort());
    for (const item of list) {
      expect(item.unread).toBe(1);
      expect(JSON.parse(JSON.stringify(item.preview))).toEqual(preview);
      expect(Object.keys(item.preview!).sort()).toEqual(Object.keys(preview).sort());
    }
    const badge = await service.badge('__proto__');
    expect(Object.keys(badge.conversations).sort()).toEqual([...NAMES].sort());
    expect(badge.conversationsTotal).toBe(NAMES.length);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('counter ids with those names are idempotent, retractable and read like any other', async () => {
    const { service } = manualService(ctx().store);
    const events = NAMES.map((id) => ({ user: 'constructor', kind: 'mention', id }));
    expect(await service.ingestCounterEvents(events)).toEqual({
      accepted: NAMES.length,
      ignored: 0,
    });
    expect(await service.ingestCounterEvents(events)).toEqual({
      accepted: 0,
      ignored: NAMES.length,
    });
    await service.retractCounterEvent('constructor', 'mention', '__proto__');
    expect((await service.badge('constructor')).counters).toEqual({ mention: NAMES.length - 1 });
    await service.read('constructor', { scope: 'counter', kind: 'mention' });
    expect((await service.badge('constructor')).counters).toBeUndefined();
  });
});

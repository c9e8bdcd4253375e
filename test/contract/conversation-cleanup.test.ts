/**
 * What leaving, dissolving and the inactive-user job leave behind on Redis (docs/semantics.md:
 * leaving or dissolution "forgets that member's cursor and mute"; an inactive user's per-user
 * state "may be dropped"). The whole keyspace of the test's prefix is walked with SCAN and
 * every key, hash field and value, set member and sorted-set member is listed; none may still
 * name what was removed.
 *
 * Not walked: the change-log streams (`…:events`, `{g}:shared`, `{g}:posts`). They are bounded
 * logs (MAXLEN) the cores follow, and by design hold the history, e.g. "messages of c" events.
 * Stored badge states are walked: they are recomputed from the sources, as a core does on the
 * `marks` event the service appends for every member removed.
 */
import type { BadgeService } from '@bubble/badges';
import { DAY_MS, HOUR_MS } from '@bubble/protocol';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { RedisStore } from '@bubble/store';
import { describeEachEngine, manualService, scanKeys } from '../support/engines.js';

/** Every key of `prefix` and what it holds, one string per key, field, member or value. */
async function keyspace(admin: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const key of (await scanKeys(admin, `${prefix}:*`)).sort()) {
    const type = await admin.type(key);
    switch (type) {
      case 'hash':
        for (const [field, value] of Object.entries(await admin.hgetall(key))) {
          out.push(`${key} [${field}] = ${value}`);
        }
        break;
      case 'set':
        for (const member of await admin.smembers(key)) out.push(`${key} ∋ ${member}`);
        break;
      case 'zset':
        for (const member of await admin.zrange(key, '0', '-1')) out.push(`${key} ∋ ${member}`);
        break;
      case 'string':
        out.push(`${key} = ${await admin.get(key)}`);
        break;
      case 'stream':
        out.push(`${key} (stream, not walked)`);
        break;
      default:
        out.push(`${key} (${type})`);
    }
  }
  return out;
}

/** A badge state with no counts: "<key>:badges [<user>] = <epoch>|<version>|<computedAt>|". */
const EMPTY_BADGE = /:badges \[[^\]]+\] = [^|]*\|\d+\|\d+\|$/;
const OFFLINE_ENTRY = /:\{p:\d+\}:offline ∋ /;

const mentioning = (entries: readonly string[], ...words: string[]): string[] =>
  entries.filter((entry) => words.every((word) => entry.includes(word)));

/** What a core does on a `marks` event: the badges recomputed from the stored sources. */
async function recompute(service: BadgeService, users: readonly string[]): Promise<void> {
  for (const user of users) await service.badge(user);
}

describeEachEngine(
  'Redis cleanup of conversations and inactive users',
  (ctx) => {
    it('a member who leaves leaves no cursor, mute or index entry; a dissolved conversation leaves nothing', async () => {
      const { store, prefix } = ctx();
      const admin = ctx().admin!;
      const { service } = manualService(store);
      const conv = 'conv-zeta';
      const everyone = ['ann-x', 'bob-leaver', 'cid-muted', 'dee-replaced'];
      await service.replaceMembers(conv, everyone);
      await service.replaceMembers('conv-other', ['ann-x', 'bob-leaver']);
      await service.ingestMessages(conv, [
        { seq: 1, from: 'ann-x', preview: { text: 'hi' } },
        { seq: 2, from: 'bob-leaver' },
        { seq: 3, from: 'cid-muted' },
      ]);
      await service.ingestMessages('conv-other', [{ seq: 1, from: 'ann-x' }]);
      await service.setMuted('bob-leaver', conv, true);
      await service.setMuted('cid-muted', conv, true);
      await service.read('bob-leaver', { scope: 'conversation', id: conv, seq: 2 });
      await recompute(service, everyone);
      let entries = await keyspace(admin, prefix!);
      // Each member's cursor, index entry and badge field are there to begin with.
      expect(mentioning(entries, conv, 'bob-leaver').length).toBeGreaterThanOrEqual(2);
      expect(mentioning(entries, 'dee-replaced', conv).length).toBeGreaterThanOrEqual(3);

      // Leaving: by removeMember, and by a replace that no longer names the member.
      await service.removeMember(conv, 'bob-leaver');
      await service.replaceMembers(conv, ['ann-x', 'cid-muted']);
      await recompute(service, everyone);
      entries = await keyspace(admin, prefix!);
      expect(mentioning(entries, conv, 'bob-leaver')).toEqual([]);
      expect(mentioning(entries, conv, 'dee-replaced')).toEqual([]);
      // Their other conversation, and the members who stayed, are untouched.
      expect(mentioning(entries, 'bob-leaver', 'conv-other').length).toBeGreaterThanOrEqual(2);
      expect(mentioning(entries, 'cid-muted', conv)).toEqual([
        `${prefix}:im:{c:${conv}}:members [cid-muted] = 3m`,
        `${prefix}:im:{u:cid-muted}:activity ∋ ${conv}`,
        `${prefix}:im:{u:cid-muted}:activity-seqs [${conv}] = 3`,
        `${prefix}:im:{u:cid-muted}:conversations ∋ ${conv}`,
      ]);
      // Nothing of theirs but the badge state of a user with nothing unread, and its entry in
      // the offline index the lookback expiry walks.
      expect(
        mentioning(entries, 'dee-replaced').filter(
          (e) => !EMPTY_BADGE.test(e) && !OFFLINE_ENTRY.test(e),
        ),
      ).toEqual([]);

      // Dissolving: the conversation's keys go, and every member's index entry and badge field.
      await service.dissolve(conv);
      await recompute(service, everyone);
      entries = await keyspace(admin, prefix!);
      expect(mentioning(entries, conv)).toEqual([]);
      expect(await store.conversations.members(conv)).toBeNull();
      expect(mentioning(entries, 'ann-x', 'conv-other').length).toBeGreaterThanOrEqual(2);
      // A user left in no conversation has no index key at all.
      expect(
        mentioning(entries, 'cid-muted').filter(
          (e) => !EMPTY_BADGE.test(e) && !OFFLINE_ENTRY.test(e),
        ),
      ).toEqual([]);
      expect(await scanKeys(admin, `${prefix}:im:*cid-muted*`)).toEqual([]);

      // Joining again starts fresh: at maxSeq, not muted.
      await service.addMembers(conv, ['cid-muted']);
      expect(await store.conversations.memberships('cid-muted')).toEqual([
        { conversation: conv, maxSeq: 0, readSeq: 0, muted: false, lastTs: 0, preview: null },
      ]);
    });

    it('the inactive-user job deletes the marks key and the last-seen entry of those it drops', async () => {
      const { store, prefix } = ctx();
      const admin = ctx().admin!;
      const { service, clock } = manualService(store, { rules: { inactiveDays: 30 } });
      await service.publishNotice(5);
      await service.markReddot('shop');
      await service.badge('gone-user', { seen: true });
      await service.read('gone-user', { scope: 'reddot', name: 'shop' });
      await service.read('gone-user', { scope: 'notices' });
      clock.advance(2 * HOUR_MS);
      await service.badge('stays-user', { seen: true });
      let entries = await keyspace(admin, prefix!);
      expect(mentioning(entries, ':marks:', 'gone-user').length).toBeGreaterThanOrEqual(3);

      clock.advance(30 * DAY_MS - HOUR_MS); // gone-user unseen for 30 days + 1 h, stays-user 29 d 23 h
      expect(await service.dropInactiveUsers(100)).toEqual(['gone-user']);
      entries = await keyspace(admin, prefix!);
      expect(mentioning(entries, ':marks:', 'gone-user')).toEqual([]);
      // With the marks go the feed cursor, the badge state and its offline entry.
      expect(mentioning(entries, 'gone-user')).toEqual([]);
      expect(await scanKeys(admin, `${prefix}:marks:{u:gone-user}`)).toEqual([]);
      expect(mentioning(entries, ':marks:', 'stays-user').sort()).toEqual([
        `${prefix}:marks:{g}:lastseen ∋ stays-user`,
        `${prefix}:marks:{u:stays-user} [at] = ${clock.now() - 30 * DAY_MS + HOUR_MS}`,
        `${prefix}:marks:{u:stays-user} [seen] = 5`,
      ]);
      expect(await store.marks.state('gone-user')).toEqual({ seen: null, clicks: {} });

      clock.advance(2 * HOUR_MS);
      expect(await service.dropInactiveUsers(100)).toEqual(['stays-user']);
      expect(mentioning(await keyspace(admin, prefix!), ':marks:')).toEqual([]);
    });

    it('a stale last-seen entry moves to the sight that kept the user, so it does not block the job', async () => {
      const { store } = ctx();
      const admin = ctx().admin!;
      const { service, clock } = manualService(store, { rules: { inactiveDays: 30 } });
      await service.badge('seen-lately', { seen: true });
      const index = (store as RedisStore).keys.lastSeen();
      // As after a crash between recording a sight and indexing it: the index is older.
      await admin.zadd(index, clock.now() - 40 * DAY_MS, 'seen-lately');
      expect(await service.dropInactiveUsers(1)).toEqual([]);
      expect(Number(await admin.zscore(index, 'seen-lately'))).toBe(clock.now());
      // Kept, and out of the way: the next run finds nobody due.
      expect(await admin.zrangebyscore(index, '-inf', clock.now() - 30 * DAY_MS)).toEqual([]);
    });
  },
  ['redis'],
);

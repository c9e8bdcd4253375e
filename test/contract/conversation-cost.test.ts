/**
 * What one message and one notice cost on Redis (docs/semantics.md: "Conversations with more than
 * BUBBLE_LARGE_GROUP members must not cost one write per member per message"; "Publishing a
 * notice writes O(1) keys, never one per user").
 *
 * A second connection runs MONITOR on this file's own redis-server; the commands between two
 * ECHO markers sent on the store's connection are the cost of the call in between, counting
 * the commands the Lua scripts run ("lua" source) as well as the ones the client sent. The
 * same call must cost the very same commands for a 2-member and a 10,000-member conversation,
 * and for 2 and 10,000 users with a notice cursor.
 */
import { DEFAULT_LARGE_GROUP, RedisStore } from '@bubble/store';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { describeEachEngine, manualService } from '../support/engines.js';

const LARGE = 10_000;
/** What one call may cost at most, whatever the size: a few scripts and what they run. */
const SMALL = 16;

interface Monitored {
  command: string;
  /** "lua" for a command run by a script, else the client's address. */
  source: string;
  marker: string | undefined;
}

/** The commands `call` makes Redis run, in order, as MONITOR (on a new connection) saw them. */
async function costOf(
  admin: Redis,
  store: RedisStore,
  call: () => Promise<unknown>,
): Promise<string[]> {
  const monitor = await admin.monitor();
  const id = Math.random().toString(36).slice(2);
  const seen: Monitored[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const onCommand = (_time: string, args: string[], source: string) => {
    const command = String(args[0]).toLowerCase();
    const marker = command === 'echo' ? args[1] : undefined;
    seen.push({ command, source, marker });
    if (marker === `end-${id}`) done();
  };
  monitor.on('monitor', onCommand);
  await store.redis.echo(`start-${id}`);
  await call();
  await store.redis.echo(`end-${id}`);
  await finished;
  monitor.disconnect();
  const from = seen.findIndex((m) => m.marker === `start-${id}`);
  const to = seen.findIndex((m) => m.marker === `end-${id}`);
  return seen.slice(from + 1, to).map((m) => (m.source === 'lua' ? `  ${m.command}` : m.command));
}

describeEachEngine(
  'cost of a message and a notice',
  (ctx) => {
    it('one message costs the same few commands just above BUBBLE_LARGE_GROUP and at 10,000 members; a small one writes each member once', async () => {
      const { store } = ctx();
      const admin = ctx().admin!;
      const redis = store as RedisStore;
      const { service } = manualService(store);

      const members = (n: number) => Array.from({ length: n }, (_, i) => `member${i}`);
      await service.replaceMembers('small', members(2));
      await service.replaceMembers('above', members(DEFAULT_LARGE_GROUP + 1));
      await service.replaceMembers('large', members(LARGE));
      expect((await store.conversations.members('large'))!.length).toBe(LARGE);
      // Loads the scripts (a first EVALSHA answered NOSCRIPT would add an EVAL).
      await service.ingestMessages('small', [{ seq: 1, from: 'member1' }]);

      const message = (seq: number) => [{ seq, from: 'member1', preview: { text: 'hello' } }];
      await service.ingestMessages('above', [{ seq: 1, from: 'member1' }]);
      const small = await costOf(admin, redis, () => service.ingestMessages('small', message(2)));
      const above = await costOf(admin, redis, () => service.ingestMessages('above', message(3)));
      const large = await costOf(admin, redis, () => service.ingestMessages('large', message(7)));
      console.info(
        `one message, 2 members: ${small.length} commands\n${small.join('\n')}\n` +
          `one message, ${LARGE} members: ${large.length} commands\n${large.join('\n')}`,
      );
      expect(large).toEqual(above);
      expect(large.length).toBeLessThanOrEqual(SMALL);
      // Three calls from the client: the ingest script, the shared-log append and the sender's
      // list signal (the other members' lists follow their badges).
      expect(large.filter((c) => !c.startsWith(' '))).toEqual(['evalsha', 'evalsha', 'evalsha']);
      // A small conversation also writes each member's activity index: one script each.
      expect(small.filter((c) => !c.startsWith(' '))).toEqual([
        'evalsha',
        'evalsha',
        'evalsha',
        'evalsha',
        'evalsha',
      ]);

      // The message counted for everyone else, and moved the sender's own cursor.
      const [last] = await store.conversations.memberships(`member${LARGE - 1}`);
      expect(last).toMatchObject({ conversation: 'large', maxSeq: 7, readSeq: 0 });
      const [sender] = (await store.conversations.memberships('member1')).filter(
        (m) => m.conversation === 'large',
      );
      expect(sender).toMatchObject({ maxSeq: 7, readSeq: 7 });
    });

    it('a list read costs the same commands for a user in 150 and in 1,500 conversations', async () => {
      const { store } = ctx();
      const admin = ctx().admin!;
      const redis = store as RedisStore;
      const { service } = manualService(store);
      const join = async (user: string, from: number, to: number) => {
        for (let i = from; i < to; i += 100) {
          const ids = Array.from({ length: Math.min(100, to - i) }, (_, j) => i + j);
          await Promise.all(
            ids.map((c) => service.replaceMembers(`${user}-c${c}`, [user, 'peer'])),
          );
          await Promise.all(
            ids.map((c) =>
              service.ingestMessages(`${user}-c${c}`, [{ seq: 1, from: 'peer', ts: 1_000 + c }]),
            ),
          );
        }
      };
      await join('few', 0, 150);
      await join('many', 0, 1500);
      // The first read of each loads what it needs (scripts, nothing else is cached).
      expect(await service.conversationList('few', 100)).toHaveLength(100);
      expect(await service.conversationList('many', 100)).toHaveLength(100);
      const few = await costOf(admin, redis, () => service.conversationList('few', 100));
      const many = await costOf(admin, redis, () => service.conversationList('many', 100));
      console.info(`a list read, 150 conversations: ${few.length} commands; 1,500: ${many.length}`);
      const tally = (commands: string[]) => {
        const counts: Record<string, number> = {};
        for (const c of commands) counts[c] = (counts[c] ?? 0) + 1;
        return counts;
      };
      expect(tally(many)).toEqual(tally(few));
      // The index's top 100 and a few index reads: never a command per membership.
      expect(many.length).toBeLessThanOrEqual(2 * 100 + SMALL);
      expect((await service.conversationList('many', 100))[0]!.id).toBe('many-c1499');
    });

    it('one notice costs the same few commands with 2 and with 10,000 users seen', async () => {
      const { store } = ctx();
      const admin = ctx().admin!;
      const redis = store as RedisStore;
      const { service, clock } = manualService(store);

      const seeUsers = (from: number, to: number) =>
        Promise.all(
          Array.from({ length: to - from }, (_, i) =>
            store.marks.see(`user${from + i}`, clock.now(), () => store.notices.highestId()),
          ),
        );
      await service.publishNotice(1); // loads the scripts
      await seeUsers(0, 2);
      const few = await costOf(admin, redis, () => service.publishNotice(2));
      await seeUsers(2, LARGE);
      const many = await costOf(admin, redis, () => service.publishNotice(3));
      console.info(
        `one notice, 2 users seen: ${few.length} commands\n${few.join('\n')}\n` +
          `one notice, ${LARGE} users seen: ${many.length} commands\n${many.join('\n')}`,
      );
      expect(many).toEqual(few);
      expect(few.length).toBeLessThanOrEqual(SMALL);
      // One script: the notice and its shared-log entry are written in one step.
      expect(few.filter((c) => !c.startsWith(' '))).toEqual(['evalsha']);

      // It counts for the users seen before it, not for those seen after.
      expect((await store.marks.state('user0')).seen).toBe(1);
      expect(await store.notices.countAfter(1)).toBe(2);
      expect((await store.marks.state(`user${LARGE - 1}`)).seen).toBe(2);
      expect(await store.notices.countAfter(2)).toBe(1);
    });
  },
  ['redis'],
);

/**
 * The bubble-core's in-memory path for notices, red dots and conversations against the stored
 * sources: a real CoreNode owning every pool follows the change logs while random platform and
 * end-user calls run; after each call and one sweep, every online user's stored badge (what
 * pushes and polls serve) must equal the badge computed from the stored sources, which
 * test/property/all-sources checks against the definition.
 */
import { decodeFields, encodeFields, systemClock } from '@bubble/protocol';
import { CoreNode } from '@bubble/core';
import { BadgeService } from '@bubble/badges';
import { MemoryPoolLocks, type BubbleStore } from '@bubble/store';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { describeEachEngine, type EngineName } from '../support/engines.js';
import { startSoloCore } from '../support/solo-core.js';

const USERS = ['u0', 'u1', 'u2', 'u3'] as const;
const CONVERSATIONS = ['c1', 'c2'] as const;
const REDDOTS = ['r1', 'r2'] as const;
const AUTHOR = 'a1';
const RUNS: Record<EngineName, number> = { memory: 40, redis: 15 };

interface World {
  store: BubbleStore;
  service: BadgeService;
  core: CoreNode;
  online: Set<string>;
}

type Step = { name: string; run: (w: World) => Promise<unknown> };

const user = fc.constantFrom(...USERS);
const conversation = fc.constantFrom(...CONVERSATIONS);
const reddot = fc.constantFrom(...REDDOTS);
const noticeId = fc.integer({ min: 1, max: 5 });
const seq = fc.integer({ min: 1, max: 6 });
let postCounter = 0;

const step: fc.Arbitrary<Step> = fc.oneof(
  user.map((u) => ({
    name: `online(${u})`,
    run: async (w: World) => {
      w.online.add(u);
      await w.service.setPresence(u, true, 3_600_000);
    },
  })),
  user.map((u) => ({
    name: `offline(${u})`,
    run: async (w: World) => {
      w.online.delete(u);
      await w.service.setPresence(u, false, 0);
    },
  })),
  noticeId.map((id) => ({
    name: `publish(${id})`,
    run: (w: World) => w.service.publishNotice(id),
  })),
  noticeId.map((id) => ({
    name: `withdraw(${id})`,
    run: (w: World) => w.service.withdrawNotice(id),
  })),
  reddot.map((name) => ({ name: `mark(${name})`, run: (w: World) => w.service.markReddot(name) })),
  reddot.map((name) => ({
    name: `clear(${name})`,
    run: (w: World) => w.service.clearReddot(name),
  })),
  fc.tuple(conversation, fc.subarray([...USERS])).map(([id, users]) => ({
    name: `replaceMembers(${id}, [${users.join(',')}])`,
    run: (w: World) => w.service.replaceMembers(id, users),
  })),
  fc.tuple(conversation, user).map(([id, u]) => ({
    name: `addMembers(${id}, [${u}])`,
    run: (w: World) => w.service.addMembers(id, [u]),
  })),
  fc.tuple(conversation, user).map(([id, u]) => ({
    name: `removeMember(${id}, ${u})`,
    run: (w: World) => w.service.removeMember(id, u),
  })),
  conversation.map((id) => ({
    name: `dissolve(${id})`,
    run: (w: World) => w.service.dissolve(id),
  })),
  message(),
  message(),
  fc.tuple(conversation, seq, fc.constantFrom(...USERS, 'x9')).map(([id, s, from]) => ({
    name: `message(${id}, ${s} from ${from})`,
    run: (w: World) => w.service.ingestMessages(id, [{ seq: s, from }]),
  })),
  fc.tuple(user, conversation, fc.boolean()).map(([u, id, muted]) => ({
    name: `mute(${u}, ${id}, ${muted})`,
    run: (w: World) => w.service.setMuted(u, id, muted),
  })),
  fc
    .tuple(
      user,
      fc.oneof(
        fc.constant({ scope: 'all' as const }),
        fc.constant({ scope: 'notices' as const }),
        fc.constant({ scope: 'feed' as const }),
        reddot.map((name) => ({ scope: 'reddot' as const, name })),
        fc
          .tuple(conversation, fc.option(seq, { nil: undefined }))
          .map(([id, s]) =>
            s === undefined
              ? { scope: 'conversation' as const, id }
              : { scope: 'conversation' as const, id, seq: s },
          ),
      ),
    )
    .map(([u, request]) => ({
      name: `read(${u}, ${JSON.stringify(request)})`,
      run: (w: World) => w.service.read(u, request),
    })),
  user.map((u) => ({ name: `poll(${u})`, run: (w: World) => w.service.badge(u, { seen: true }) })),
  fc.constant(null).map(() => {
    const id = `p${postCounter++}`;
    return {
      name: `post(${id})`,
      run: (w: World) => w.service.ingestPosts([{ author: AUTHOR, id, ts: Date.now() }]),
    };
  }),
);

function message(): fc.Arbitrary<Step> {
  return fc.tuple(conversation, seq, fc.constantFrom(...USERS, 'x9')).map(([id, s, from]) => ({
    name: `message(${id}, ${s} from ${from})`,
    run: (w: World) => w.service.ingestMessages(id, [{ seq: s, from }]),
  }));
}

/** What a cold start would answer now, without storing it. */
async function truthOf(w: World, u: string) {
  const now = Date.now();
  const [feed, extras] = await Promise.all([
    w.service.computeFeed(u, now),
    w.service.computeExtras(u),
  ]);
  return decodeFields(encodeFields(feed, extras));
}

describeEachEngine('bubble-core holds every source', (ctx, engine) => {
  it('stores, for every online user, the badge the stored sources define', async () => {
    const { freshStore } = ctx();
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const store = freshStore();
        const locks = new MemoryPoolLocks();
        const service = new BadgeService(store, systemClock);
        // Reconciliation would repair what this test looks for: the incremental path alone.
        const core = await startSoloCore(store, { id: 'core-1', locks, reconcilePerSweep: 0 });
        try {
          for (const u of USERS) await service.follow(u, AUTHOR);
          // Most users online and in conversations from the start, so most steps matter.
          const w: World = { store, service, core, online: new Set() };
          for (const u of USERS.slice(0, 3)) {
            w.online.add(u);
            await service.setPresence(u, true, 3_600_000);
          }
          await service.replaceMembers('c1', ['u0', 'u1', 'u3']);
          await service.replaceMembers('c2', ['u1', 'u2']);
          const done: string[] = [];
          for (const s of steps) {
            try {
              await s.run(w);
            } catch (error) {
              if (!(error as { code?: string }).code?.startsWith('UB_ERR_')) throw error;
            }
            done.push(s.name);
            await core.sweepNow();
            for (const u of w.online) {
              const stored = await store.badges.load(u);
              const where = `${done.join(' → ')}\nstored badge of online ${u}`;
              expect(stored, where).not.toBeNull();
              expect(decodeFields(stored!.fields), where).toEqual(await truthOf(w, u));
            }
          }
        } finally {
          await core.close();
          await locks.close();
          await store.close();
        }
      }),
      { numRuns: RUNS[engine], verbose: 1 },
    );
  }, 240_000);
});

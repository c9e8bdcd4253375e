import { assertId, type Badge, type ReadRequest } from '@bubble/protocol';
import type { PoolEvent } from '@bubble/store';
import type { ColdStart } from './cold-start.js';
import type { Counters } from './counters.js';
import type { BadgeContext } from './context.js';
import { appendUserEvents } from './pool-events.js';
import type { Sightings } from './sightings.js';
import { notMember } from './validation.js';

/** A user's reads: the cursors they move, and the badge after them. */
export class Reads {
  constructor(
    private readonly ctx: BadgeContext,
    private readonly sightings: Sightings,
    private readonly coldStart: ColdStart,
    private readonly counters: Counters,
  ) {}

  /** A read of docs/semantics.md by the user themselves; answers the badge after it. */
  async read(user: string, request: ReadRequest): Promise<Badge> {
    assertId(user, 'user');
    if (request.scope === 'counter') this.counters.assertKind(request.kind);
    // Only a read answered with a badge sees the user: one refused (not a member) must not
    // start a new user's notice cursor. A conversation read touches no notice cursor, so it
    // sees the user once it succeeded; every other scope first (a notices read moves `seen`).
    if (request.scope !== 'conversation') await this.sightings.see(user);
    const { store } = this.ctx;
    const now = this.ctx.clock.now();
    const events: PoolEvent[] = [];
    const readFeed = async (to: number) => {
      const readAt = await store.cursors.advanceFeedReadAt(user, to);
      events.push({ kind: 'cursor', user, readAt });
    };
    switch (request.scope) {
      case 'feed':
        await readFeed(Math.min(request.upTo ?? now, now));
        break;
      case 'notices':
        await store.marks.advanceSeen(user, request.upTo ?? (await store.notices.highestId()));
        events.push({ kind: 'marks', user });
        break;
      case 'conversation': {
        assertId(request.id, 'conversation');
        const cursor = await store.conversations.read(request.id, user, request.seq);
        if (cursor === null) throw notMember(request.id);
        await this.sightings.see(user);
        events.push({ kind: 'marks', user });
        break;
      }
      case 'reddot':
        assertId(request.name, 'red dot');
        await store.marks.click(user, [request.name], now);
        events.push({ kind: 'marks', user });
        break;
      case 'counter':
        await store.counters.read(user, [request.kind], request.upTo);
        events.push({ kind: 'counters', user });
        break;
      case 'all': {
        const [highest, marked, memberships] = await Promise.all([
          store.notices.highestId(),
          store.reddots.all(),
          store.conversations.membershipSeqs([user]).then(([seqs]) => seqs!),
        ]);
        await Promise.all([
          readFeed(now),
          store.marks.advanceSeen(user, highest),
          store.marks.click(user, Object.keys(marked), now),
          ...memberships.map((m) => store.conversations.read(m.conversation, user)),
          store.counters.read(user, this.ctx.counters.kinds, undefined),
        ]);
        // A core reloads a user's counters with their marks.
        events.push({ kind: 'marks', user });
        break;
      }
    }
    await Promise.all([
      appendUserEvents(this.ctx, user, events),
      // The user's watched lists elsewhere: a read racing a message can leave the counts as
      // they were while the entry moved on.
      request.scope === 'conversation' || request.scope === 'all'
        ? store.fencedBadges.signalLists([user])
        : undefined,
      // The user's other devices: a phone shown a higher total is corrected (docs/api.md).
      this.ctx.offlineJobs?.append({ kind: 'user', user, source: 'read', decrease: true }),
    ]);
    return this.coldStart.badge(user);
  }

  /** POST /v1/users/{user}/badge/reset: recomputed from the stored sources, pools told to reload. */
  async reset(user: string): Promise<Badge> {
    assertId(user, 'user');
    await appendUserEvents(this.ctx, user, [
      { kind: 'follows', user },
      { kind: 'marks', user },
    ]);
    return this.coldStart.badge(user);
  }
}

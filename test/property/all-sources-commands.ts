/** The commands of the all-sources model test: each runs on BadgeService and on the model. */
import { BubbleError, type Badge } from '@bubble/protocol';
import type { BadgeService } from '@bubble/badges';
import fc from 'fast-check';
import { expect } from 'vitest';
import { badgeState } from '../support/badges.js';
import type { Model, Names } from './all-sources-model.js';

export interface Real {
  service: BadgeService;
  clock: { now(): number; advance(ms: number): void };
  /** computedAt of the last badge served per user: what a client reads up to. */
  shownAt: Map<string, number>;
}

/** The command sequences over `names`, each command checking every badge after it. */
export function allSourcesCommands(names: Names) {
  const {
    users: USERS,
    outsider: OUTSIDER,
    conversations: CONVERSATIONS,
    reddots: REDDOTS,
  } = names;
  const { author: AUTHOR, kinds: KINDS, eventIds: EVENT_IDS } = names;

  function checkBadge(model: Model, user: string, badge: Badge, context: string): void {
    const where = `${context}, badge of ${user}\n${model.describe()}`;
    const expected = model.badge(user);
    expect(badgeState(badge), where).toEqual(expected);
    const key = JSON.stringify(expected);
    const previous = model.last.get(user);
    if (previous) {
      expect(badge.epoch, where).toBe(previous.epoch);
      const moved = previous.shown !== key;
      expect(badge.version, `${where}\nversion moves by one iff the badge changes`).toBe(
        previous.version + (moved ? 1 : 0),
      );
    }
    model.last.set(user, { epoch: badge.epoch, version: badge.version, shown: key });
  }

  async function checkAll(model: Model, real: Real, after: string): Promise<void> {
    for (const user of USERS) {
      const badge = await real.service.badge(user);
      real.shownAt.set(user, badge.computedAt);
      checkBadge(model, user, badge, `after ${after}`);
    }
  }

  // ------------------------------------------------------------------------------------- commands

  type Cmd = fc.AsyncCommand<Model, Real>;

  /** A model step that cannot fail: it changes the model, and the service should answer ok. */
  const succeeds =
    (change: (model: Model) => unknown) =>
    (model: Model): string => {
      change(model);
      return 'ok';
    };

  /** A command: its effect on the model, the call on the service, the outcome the model expects. */
  function command(
    name: string,
    apply: (model: Model) => string,
    call: (real: Real) => Promise<unknown>,
    answer?: (model: Model, value: unknown) => void,
  ): Cmd {
    return {
      check: () => true,
      async run(model: Model, real: Real) {
        const expected = apply(model);
        let value: unknown;
        let outcome = 'ok';
        try {
          value = await call(real);
        } catch (error) {
          if (!(error instanceof BubbleError)) throw error;
          outcome = error.code;
        }
        expect(outcome, `${name}\n${model.describe()}`).toBe(expected);
        if (outcome === 'ok' && answer) answer(model, value);
        await checkAll(model, real, name);
      },
      toString: () => name,
    };
  }

  const user = fc.constantFrom(...USERS);
  const anySender = fc.constantFrom(...USERS, OUTSIDER);
  const conversation = fc.constantFrom(...CONVERSATIONS);
  const reddot = fc.constantFrom(...REDDOTS);
  const noticeId = fc.integer({ min: 1, max: 6 });
  const seq = fc.integer({ min: 1, max: 8 });

  const publish = noticeId.map((id) =>
    command(
      `publish(${id})`,
      succeeds((m) => {
        m.live.add(id);
        m.highest = Math.max(m.highest, id);
      }),
      (r) => r.service.publishNotice(id),
    ),
  );

  const withdraw = noticeId.map((id) =>
    command(
      `withdraw(${id})`,
      succeeds((m) => m.live.delete(id)),
      (r) => r.service.withdrawNotice(id),
    ),
  );

  const mark = fc.tuple(reddot, fc.constantFrom(-2000, 0, undefined)).map(([name, offset]) =>
    command(
      `mark(${name}, ts ${offset === undefined ? 'now' : `now${offset}`})`,
      succeeds((m) => m.marked.set(name, m.now + (offset ?? 0))),
      (r) => r.service.markReddot(name, offset === undefined ? undefined : r.clock.now() + offset),
    ),
  );

  const clear = reddot.map((name) =>
    command(
      `clear(${name})`,
      succeeds((m) => m.marked.delete(name)),
      (r) => r.service.clearReddot(name),
    ),
  );

  const join = fc
    .tuple(conversation, fc.subarray([...USERS]), fc.boolean())
    .map(([id, users, replace]) =>
      command(
        `${replace ? 'replaceMembers' : 'addMembers'}(${id}, [${users.join(',')}])`,
        succeeds((m) => m.join(id, users, replace)),
        (r) => (replace ? r.service.replaceMembers(id, users) : r.service.addMembers(id, users)),
      ),
    );

  const leave = fc.tuple(conversation, user).map(([id, u]) =>
    command(
      `removeMember(${id}, ${u})`,
      succeeds((m) => m.conversations.get(id)?.members.delete(u)),
      (r) => r.service.removeMember(id, u),
    ),
  );

  const dissolve = conversation.map((id) =>
    command(
      `dissolve(${id})`,
      succeeds((m) => m.conversations.delete(id)),
      (r) => r.service.dissolve(id),
    ),
  );

  const message = fc
    .tuple(conversation, fc.array(fc.tuple(seq, anySender), { minLength: 1, maxLength: 3 }))
    .map(([id, batch]) =>
      command(
        `messages(${id}, ${batch.map(([s, from]) => `${s} from ${from}`).join('; ')})`,
        (m) => {
          const c = m.conversations.get(id);
          if (!c) return 'UB_ERR_NOT_FOUND';
          for (const [s, from] of batch) {
            if (s > c.maxSeq) {
              c.maxSeq = s;
              c.lastTs = m.now;
            }
            const member = c.members.get(from);
            if (member) member.readSeq = Math.max(member.readSeq, s);
          }
          return 'ok';
        },
        (r) =>
          r.service.ingestMessages(
            id,
            batch.map(([s, from]) => ({ seq: s, from })),
          ),
      ),
    );

  const mute = fc.tuple(user, conversation, fc.boolean()).map(([u, id, muted]) =>
    command(
      `mute(${u}, ${id}, ${muted})`,
      (m) => {
        const member = m.conversations.get(id)?.members.get(u);
        if (!member) return 'UB_ERR_FORBIDDEN';
        member.muted = muted;
        return 'ok';
      },
      (r) => r.service.setMuted(u, id, muted),
    ),
  );

  type ReadSpec =
    | { scope: 'feed' }
    | { scope: 'notices'; upTo?: number }
    | { scope: 'conversation'; id: string; seq?: number }
    | { scope: 'reddot'; name: string }
    | { scope: 'all' };

  const readSpec: fc.Arbitrary<ReadSpec> = fc.oneof(
    fc.constant<ReadSpec>({ scope: 'feed' }),
    fc
      .option(noticeId, { nil: undefined })
      .map((upTo): ReadSpec =>
        upTo === undefined ? { scope: 'notices' } : { scope: 'notices', upTo },
      ),
    fc
      .tuple(conversation, fc.option(seq, { nil: undefined }))
      .map(([id, s]): ReadSpec =>
        s === undefined ? { scope: 'conversation', id } : { scope: 'conversation', id, seq: s },
      ),
    reddot.map((name): ReadSpec => ({ scope: 'reddot', name })),
    fc.constant<ReadSpec>({ scope: 'all' }),
  );

  const read = fc.tuple(user, readSpec).map(([u, spec]) =>
    command(
      `read(${u}, ${JSON.stringify(spec)})`,
      (m) => {
        // Refused: no badge is returned, so the user is not seen either.
        if (spec.scope === 'conversation' && !m.conversations.get(spec.id)?.members.has(u)) {
          return 'UB_ERR_FORBIDDEN';
        }
        m.see(u);
        switch (spec.scope) {
          case 'feed':
            m.readAt.set(u, Math.max(m.readAt.get(u) ?? -Infinity, m.now));
            break;
          case 'notices':
            m.seen.set(u, Math.max(m.seen.get(u)!, spec.upTo ?? m.highest));
            break;
          case 'conversation': {
            const c = m.conversations.get(spec.id)!;
            const member = c.members.get(u)!;
            member.readSeq = Math.max(member.readSeq, Math.min(spec.seq ?? c.maxSeq, c.maxSeq));
            break;
          }
          case 'reddot':
            m.click(u, [spec.name]);
            break;
          case 'all':
            for (const kind of KINDS) m.counting.delete(`${u} ${kind}`);
            m.readAt.set(u, Math.max(m.readAt.get(u) ?? -Infinity, m.now));
            m.seen.set(u, Math.max(m.seen.get(u)!, m.highest));
            m.click(u, m.marked.keys());
            for (const c of m.conversations.values()) {
              const member = c.members.get(u);
              if (member) member.readSeq = c.maxSeq;
            }
            break;
        }
        return 'ok';
      },
      (r) => r.service.read(u, spec),
      (m, badge) => checkBadge(m, u, badge as Badge, `the answer of read(${u})`),
    ),
  );

  const counterEvent = fc.record({
    user,
    kind: fc.constantFrom(...KINDS),
    id: fc.constantFrom(...EVENT_IDS),
  });

  const counterIngest = fc.array(counterEvent, { minLength: 1, maxLength: 3 }).map((events) => {
    let expected = { accepted: 0, ignored: 0 };
    return command(
      `counters(${events.map((e) => `${e.user}/${e.kind}/${e.id}`).join('; ')})`,
      succeeds((m) => {
        expected = { accepted: 0, ignored: 0 };
        for (const { user: u, kind, id } of events) {
          const key = `${u} ${kind} ${id}`;
          if (m.eventsKnown.has(key)) {
            expected.ignored++;
            continue;
          }
          m.eventsKnown.add(key);
          let ids = m.counting.get(`${u} ${kind}`);
          if (!ids) m.counting.set(`${u} ${kind}`, (ids = new Set()));
          ids.add(id);
          expected.accepted++;
        }
      }),
      (r) => r.service.ingestCounterEvents(events),
      (_, value) => expect(value).toEqual(expected),
    );
  });

  const counterRetract = counterEvent.map(({ user: u, kind, id }) =>
    command(
      `retract(${u}/${kind}/${id})`,
      succeeds((m) => {
        m.eventsKnown.add(`${u} ${kind} ${id}`);
        m.counting.get(`${u} ${kind}`)?.delete(id);
      }),
      (r) => r.service.retractCounterEvent(u, kind, id),
    ),
  );

  const counterRead = fc
    .tuple(user, fc.constantFrom(...KINDS), fc.constantFrom('none', 'shown', 'zero'))
    .map(([u, kind, upTo]) =>
      command(
        `read(${u}, counter ${kind}, upTo ${upTo})`,
        succeeds((m) => {
          m.see(u);
          if (upTo !== 'zero') m.counting.delete(`${u} ${kind}`);
        }),
        (r) =>
          r.service.read(
            u,
            upTo === 'none'
              ? { scope: 'counter', kind }
              : { scope: 'counter', kind, upTo: upTo === 'zero' ? 0 : r.shownAt.get(u)! },
          ),
        (m, badge) => checkBadge(m, u, badge as Badge, `the answer of read(${u})`),
      ),
    );

  /** An end-user poll: the first one starts the user's notice cursor. */
  const see = user.map((u) =>
    command(
      `poll(${u})`,
      succeeds((m) => m.see(u)),
      (r) => r.service.badge(u, { seen: true }),
      (m, badge) => checkBadge(m, u, badge as Badge, `the poll of ${u}`),
    ),
  );

  let postCounter = 0;
  const post = fc.constant(null).map(() => {
    const id = `p${postCounter++}`;
    return command(
      `post(${AUTHOR}/${id})`,
      succeeds((m) => m.posts.push(m.now)),
      (r) => r.service.ingestPosts([{ author: AUTHOR, id, ts: r.clock.now() }]),
    );
  });

  const advance = fc.integer({ min: 1, max: 3 }).map((k) =>
    command(
      `advance(${k}s)`,
      succeeds((m) => (m.now += k * 1000)),
      async (r) => r.clock.advance(k * 1000),
    ),
  );

  /** The conversation list: newest activity first, ties by the higher seq. */
  const list = user.map((u): Cmd => ({
    check: () => true,
    async run(model: Model, real: Real) {
      const expected = [...model.conversations]
        .filter(([, c]) => c.members.has(u))
        .map(([id, c]) => ({
          id,
          unread: c.maxSeq - c.members.get(u)!.readSeq,
          maxSeq: c.maxSeq,
          lastTs: c.lastTs,
          muted: c.members.get(u)!.muted,
        }))
        .sort((a, b) => b.lastTs - a.lastTs || b.maxSeq - a.maxSeq || (a.id < b.id ? -1 : 1));
      const actual = (await real.service.conversationList(u, 100)).map(
        ({ id, unread, maxSeq, lastTs, muted }) => ({ id, unread, maxSeq, lastTs, muted }),
      );
      expect(actual, `list(${u})\n${model.describe()}`).toEqual(expected);
    },
    toString: () => `list(${u})`,
  }));

  const commands = fc.commands<Model, Real, false>(
    [
      publish,
      publish,
      withdraw,
      mark,
      clear,
      join,
      join,
      leave,
      dissolve,
      message,
      message,
      message,
      mute,
      read,
      read,
      read,
      see,
      see,
      post,
      advance,
      list,
      counterIngest,
      counterIngest,
      counterRetract,
      counterRead,
    ],
    { maxCommands: 50, size: 'max' },
  );

  return commands;
}

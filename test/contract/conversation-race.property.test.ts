/**
 * A read racing new messages never loses them (docs/semantics.md, "Conversations"): clearing is
 * atomic and guarded by the seq the client acknowledges.
 *
 * fast-check's scheduler decides when each concurrent store call is issued and when its answer
 * is delivered, so every run explores another interleaving of reads and ingests. Each store
 * call is atomic (one Lua script on Redis; a synchronous body in memory) and the calls of one
 * run share one connection, so the order the scheduler issues them in is the order they take
 * effect. The outcome is compared with the definition
 *
 *     readSeq(u) := max(readSeq, min(seq ?? maxSeq, maxSeq))   (a read)
 *     readSeq(u) := max(readSeq, seq)                          (u sent message seq)
 *     unread(u)  = maxSeq − readSeq(u)
 *
 * applied in that order, and with the order-free consequence: a member who only acknowledged
 * seqs they had seen (≤ the maxSeq before the race) keeps every message that arrived, in every
 * interleaving.
 */
import type { BubbleStore, ConversationMessage } from '@bubble/store';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { T0, describeEachEngine, type EngineName } from '../support/engines.js';

const RUNS: Record<EngineName, number> = { memory: 150, redis: 60 };
const CONVERSATION = 'race';
const READERS = ['m1', 'm2'] as const;
const MEMBERS = [...READERS, 's'] as const;

type Reader = (typeof READERS)[number];

type Op =
  | { kind: 'ingest'; messages: Array<{ seq: number; from: string }> }
  | { kind: 'read'; user: Reader; seq: number | undefined };

const message = (seq: number, from: string): ConversationMessage => ({
  seq,
  from,
  ts: T0 + seq,
  preview: { seq },
});

/** A conversation of MEMBERS whose maxSeq is n0, everyone's cursor at 0 (scripts loaded). */
async function setUp(store: BubbleStore, n0: number): Promise<void> {
  await store.conversations.replaceMembers(CONVERSATION, [...MEMBERS]);
  const seqs = Array.from({ length: n0 }, (_, i) => i + 1);
  await store.conversations.ingest(
    CONVERSATION,
    seqs.map((seq) => message(seq, 'outsider')),
  );
  expect(await store.conversations.read(CONVERSATION, 'nobody')).toBeNull();
}

/**
 * Schedules `call`: the scheduler picks when it is issued and when its answer is delivered.
 * `issued` records the order the calls reached the store.
 */
async function scheduled<T>(
  s: fc.Scheduler,
  label: string,
  issued: string[],
  call: () => Promise<T>,
): Promise<T> {
  await s.schedule(Promise.resolve(), `issue ${label}`);
  issued.push(label);
  return s.schedule(call(), `answer of ${label}`);
}

async function unreadOf(store: BubbleStore, user: string): Promise<number> {
  const [m] = (await store.conversations.memberships(user)).filter(
    (x) => x.conversation === CONVERSATION,
  );
  return m!.maxSeq - m!.readSeq;
}

/** The new messages n0+1 … n0+k in batches (any seq order, some sent twice), and the reads. */
const scenarioArb = fc
  .record({ n0: fc.integer({ min: 1, max: 5 }), k: fc.integer({ min: 1, max: 3 }) })
  .chain(({ n0, k }) => {
    const fresh = Array.from({ length: k }, (_, i) => n0 + 1 + i);
    const from = fc.constantFrom('s', 'm2', 'outsider');
    const batch = fc.record({ seqs: fc.shuffledSubarray(fresh, { minLength: 1 }), from });
    const read = fc.record({
      kind: fc.constant('read' as const),
      user: fc.constantFrom(...READERS),
      // Mostly the maxSeq the client saw; sometimes an older one, one ahead, or none at all.
      seq: fc.oneof(
        { weight: 3, arbitrary: fc.constant<number | undefined>(n0) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: n0 + k }) },
        { weight: 1, arbitrary: fc.constant(undefined) },
      ),
    });
    return fc.record({
      n0: fc.constant(n0),
      fresh: fc.constant(fresh),
      // Every new seq is ingested at least once: one batch holding all of them, shuffled.
      all: fc.record({ seqs: fc.shuffledSubarray(fresh, { minLength: k }), from }),
      extra: fc.array(batch, { maxLength: 2 }),
      reads: fc.array(read, { minLength: 1, maxLength: 3 }),
    });
  })
  .map(({ n0, fresh, all, extra, reads }) => {
    const ingests: Op[] = [all, ...extra].map(({ seqs, from }) => ({
      kind: 'ingest',
      messages: seqs.map((seq) => ({ seq, from })),
    }));
    return { n0, fresh, ops: [...ingests, ...reads] as Op[] };
  });

describeEachEngine('conversation read racing ingest', (ctx, engine) => {
  it('a read of seq n racing the ingest of n+1 leaves exactly 1 unread, in every interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.integer({ min: 1, max: 6 }), async (s, n) => {
        const store = ctx().freshStore();
        await setUp(store, n);
        const issued: string[] = [];
        const read = scheduled(s, `read m1@${n}`, issued, () =>
          store.conversations.read(CONVERSATION, 'm1', n),
        );
        const ingest = scheduled(s, `ingest ${n + 1}`, issued, () =>
          store.conversations.ingest(CONVERSATION, [message(n + 1, 's')]),
        );
        const [cursor, ingested] = await s.waitFor(Promise.all([read, ingest]));
        expect(cursor).toBe(n);
        expect(ingested).toEqual({ maxSeq: n + 1, senders: { s: n + 1 } });
        expect(await unreadOf(store, 'm1')).toBe(1);
        expect(await unreadOf(store, 'm2')).toBe(n + 1);
        expect(await unreadOf(store, 's')).toBe(0);
      }),
      { numRuns: RUNS[engine] },
    );
  });

  it('several messages, several reads with and without seq: every count as the definition', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), scenarioArb, async (s, { n0, fresh, ops }) => {
        const store = ctx().freshStore();
        await setUp(store, n0);

        // The calls run concurrently; the scheduler orders them. Each answer is checked against
        // the definition applied in the order the calls reached the store.
        const issued: string[] = [];
        const answers = new Map<string, unknown>();
        const tasks = ops.map((op, i) => {
          const label = `#${i} ${JSON.stringify(op)}`;
          return scheduled<unknown>(s, label, issued, () =>
            op.kind === 'read'
              ? store.conversations.read(CONVERSATION, op.user, op.seq)
              : store.conversations.ingest(
                  CONVERSATION,
                  op.messages.map((m) => message(m.seq, m.from)),
                ),
          ).then((answer) => answers.set(label, answer));
        });
        await s.waitFor(Promise.all(tasks));

        // The definition, in issue order.
        let maxSeq = n0;
        const readSeq = new Map<string, number>(MEMBERS.map((u) => [u, 0]));
        for (const label of issued) {
          const op = ops[Number(/^#(\d+)/.exec(label)![1])]!;
          if (op.kind === 'read') {
            const before = readSeq.get(op.user)!;
            const after = Math.max(before, Math.min(op.seq ?? maxSeq, maxSeq));
            readSeq.set(op.user, after);
            expect(answers.get(label), label).toBe(after);
          } else {
            const senders: Record<string, number> = {};
            for (const { seq, from } of op.messages) {
              maxSeq = Math.max(maxSeq, seq);
              const cursor = readSeq.get(from);
              if (cursor === undefined) continue;
              if (seq > cursor) readSeq.set(from, seq);
              senders[from] = Math.max(senders[from] ?? 0, seq);
            }
            expect(answers.get(label), label).toEqual({ maxSeq, senders });
          }
        }
        expect(maxSeq).toBe(n0 + fresh.length);
        for (const user of MEMBERS) {
          expect(await unreadOf(store, user), `unread(${user})`).toBe(maxSeq - readSeq.get(user)!);
        }

        // Order-free: a reader who only acknowledged what they had seen, and sent nothing new,
        // still has every new message unread whatever the interleaving.
        for (const user of READERS) {
          const reads = ops.filter((op) => op.kind === 'read' && op.user === user);
          const sent = ops.some(
            (op) => op.kind === 'ingest' && op.messages.some((m) => m.from === user),
          );
          if (
            sent ||
            reads.some((op) => op.kind !== 'read' || op.seq === undefined || op.seq > n0)
          ) {
            continue;
          }
          const acked = Math.max(0, ...reads.map((op) => (op.kind === 'read' ? op.seq! : 0)));
          expect(await unreadOf(store, user), `unread(${user}) never loses a message`).toBe(
            n0 + fresh.length - acked,
          );
        }
      }),
      { numRuns: RUNS[engine] },
    );
  });
});

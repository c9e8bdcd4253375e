/**
 * Model-based property test of the whole badge: random notices, withdrawals, red dots,
 * memberships, messages from members and non-members, mutes, reads of every scope and feed
 * posts run against BadgeService (on each engine, with a ManualClock) and against a brute-force
 * model written straight from docs/semantics.md:
 *
 *   notices(u)   = #{ notice n not withdrawn : id(n) > seen(u) }        (0 while u is unseen)
 *   unread(u, c) = maxSeq(c) − readSeq(u, c)
 *   reddots(u)   = { name : G(name) set, clicked(u, name) unset or < G(name) }
 *   counter(u,k) = #{ event of (u, k) not retracted, not cleared by a read of k }
 *                  (a read without upTo, or up to the computedAt of the last badge served, clears
 *                  every event so far; one up to 0 none; a repeated or retracted id is ignored)
 *   total        = feed + notices + Σ unread over non-muted conversations + Σ counters
 *
 * It runs twice: on ordinary ids, and on ids that are JavaScript's own property names
 * (`__proto__`, `constructor`, `toString`, …) in every id space, which must be ordinary names.
 *
 * After every command each user's badge (as a platform admin reads it, which never counts as
 * seeing the user) must equal the model; a version moves by one exactly when the badge does.
 */
import fc from 'fast-check';
import { it } from 'vitest';
import { describeEachEngine, manualService, type EngineName } from '../support/engines.js';
import { allSourcesCommands } from './all-sources-commands.js';
import { DISPLAY_CAP, JS_NAMES, modelFor, ORDINARY, type Names } from './all-sources-model.js';

allSourcesModel('', ORDINARY);
allSourcesModel(' (ids named like Object.prototype)', JS_NAMES);

function allSourcesModel(title: string, names: Names): void {
  const { users: USERS, author: AUTHOR, kinds: KINDS } = names;
  const Model = modelFor(names);
  const commands = allSourcesCommands(names);

  const RUNS: Record<EngineName, number> = { memory: 120, redis: 40 };

  describeEachEngine(`all sources model${title}`, (ctx, engine) => {
    it('matches the definition after every command', async () => {
      const { freshStore } = ctx();
      await fc.assert(
        fc.asyncProperty(commands, async (cmds) => {
          const store = freshStore();
          try {
            const { service, clock } = manualService(store, {
              rules: { displayCap: DISPLAY_CAP, counterKinds: [...KINDS] },
            });
            for (const u of USERS) await service.follow(u, AUTHOR);
            const model = new Model(clock.now());
            const shownAt = new Map<string, number>();
            for (const u of USERS) shownAt.set(u, (await service.badge(u)).computedAt);
            await fc.asyncModelRun(() => ({ model, real: { service, clock, shownAt } }), cmds);
          } finally {
            await store.close();
          }
        }),
        { numRuns: RUNS[engine], verbose: 1 },
      );
    }, 180_000);
  });
}

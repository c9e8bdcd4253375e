/**
 * The `watch` frame (shared spec api.md "WebSocket"): after `{"type":"watch","what":"conversations"}`
 * the connection gets `{"type":"conversations","items":[…]}` with the entries of
 * GET /v1/conversations that changed — a join, a message, a read, a mute, a leave (an entry that
 * left the list as `{"id","removed":true}`) — and only those; a bad `what` closes with 1008.
 * An in-process gateway with a core, on memory and on a real redis-server; every wait has a
 * deadline.
 */
import { BubbleClient, type ConversationChange } from '@bubble/client';
import { waitFor } from '@bubble/test-utils';
import { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { CLOSE, ENGINES, call, platform, tokenFor, useEngine, type LiveApp } from './support.js';
import { Client, connect } from './live-client.js';

const DEADLINE_MS = 20_000;

type Item = Record<string, unknown> & { id: string };

function listFrames(client: Client): Item[][] {
  return client.frames.flatMap((f) => (f.type === 'conversations' ? [f.items] : []));
}

/** Waits for a `conversations` frame after the first `from` whose items satisfy `predicate`. */
async function waitItems(
  client: Client,
  from: number,
  predicate: (items: Item[]) => boolean,
  what: string,
): Promise<Item[]> {
  const found = await waitFor(() => listFrames(client).slice(from).find(predicate), {
    timeoutMs: DEADLINE_MS,
    message: `${what}: frames ${JSON.stringify(listFrames(client))}`,
  });
  return found!;
}

async function ok(reply: Promise<{ status: number; text: string }>, status: number) {
  const done = await reply;
  expect(done.status, done.text).toBe(status);
}

for (const engine of ENGINES) {
  describe(`watch conversations [${engine}]`, () => {
    const rig = useEngine(engine);

    it('join, message, read, mute and leave each send the changed entry only', async () => {
      const app: LiveApp = await rig.start();
      await ok(
        platform(app, 'PUT', '/v1/conversations/c2/members', { members: ['u1', 'u3'] }),
        204,
      );
      const client = await connect(app, 'u1');
      client.send({ type: 'watch', what: 'conversations' });
      // The starting point: the whole list.
      const first = await waitItems(client, 0, () => true, 'the first list');
      expect(first.map((i) => i.id)).toEqual(['c2']);

      /** The entries of the first list frame after `change` with an entry that has `fields`. */
      const itemsAfter = async (
        what: string,
        fields: Record<string, unknown>,
        status: number,
        change: () => Promise<{ status: number; text: string }>,
      ) => {
        const seen = listFrames(client).length;
        await ok(change(), status);
        const changed = (entry: Item) =>
          Object.entries(fields).every(([key, value]) => entry[key] === value);
        return waitItems(client, seen, (i) => i.some(changed), what);
      };

      let items = await itemsAfter('join', { id: 'c1' }, 204, () =>
        platform(app, 'PUT', '/v1/conversations/c1/members', { members: ['u1', 'u2'] }),
      );
      expect(items).toEqual([
        { id: 'c1', unread: 0, maxSeq: 0, lastTs: 0, preview: null, muted: false },
      ]);

      items = await itemsAfter('message', { id: 'c1', unread: 1 }, 202, () =>
        platform(app, 'POST', '/v1/conversations/c1/messages', {
          seq: 1,
          from: 'u2',
          ts: Date.now() - 1000,
          preview: { text: 'hi' },
        }),
      );
      expect(items.map((e) => e.id)).toEqual(['c1']);
      expect(items[0]).toMatchObject({ maxSeq: 1, preview: { text: 'hi' }, muted: false });

      const token = await tokenFor('u1');
      items = await itemsAfter('read', { id: 'c1', unread: 0 }, 200, () =>
        call(app, 'POST', '/v1/badge/read', { token, body: { scope: 'conversation', id: 'c1' } }),
      );
      expect(items.map((e) => e.id)).toEqual(['c1']);

      items = await itemsAfter('mute', { id: 'c2', muted: true }, 204, () =>
        call(app, 'PUT', '/v1/conversations/c2/mute', { token, body: { muted: true } }),
      );
      expect(items.map((e) => e.id)).toEqual(['c2']);

      items = await itemsAfter('leave', { id: 'c1' }, 204, () =>
        platform(app, 'DELETE', '/v1/conversations/c1/members/u1'),
      );
      expect(items).toEqual([{ id: 'c1', removed: true }]);

      items = await itemsAfter('dissolve', { id: 'c2' }, 204, () =>
        platform(app, 'DELETE', '/v1/conversations/c2'),
      );
      expect(items).toEqual([{ id: 'c2', removed: true }]);
      // A connection that did not watch gets badges only.
      const other = await connect(app, 'u1', 'not watching');
      await other.roundTrip();
      expect(listFrames(other)).toEqual([]);
      expect(client.malformed).toEqual([]);
      client.close();
      other.close();
    });

    it('the SDK: watchConversations() emits `conversations` with the changes', async () => {
      const app = await rig.start();
      const sdk = new BubbleClient({
        url: app.url,
        token: await tokenFor('u5'),
        WebSocket: WebSocket as never,
      });
      const changes: ConversationChange[][] = [];
      sdk.on('conversations', (items) => changes.push(items));
      try {
        sdk.start();
        sdk.watchConversations();
        await waitFor(() => changes.length > 0, {
          timeoutMs: DEADLINE_MS,
          message: 'no first list',
        });
        await ok(
          platform(app, 'PUT', '/v1/conversations/s1/members', { members: ['u5', 'u6'] }),
          204,
        );
        await waitFor(() => sdk.conversationIds.includes('s1'), {
          timeoutMs: DEADLINE_MS,
          message: `no join: ${JSON.stringify(changes)}`,
        });
        await ok(platform(app, 'DELETE', '/v1/conversations/s1'), 204);
        await waitFor(() => !sdk.conversationIds.includes('s1'), {
          timeoutMs: DEADLINE_MS,
          message: `no removal: ${JSON.stringify(changes)}`,
        });
        expect(changes.flat()).toContainEqual({ id: 's1', removed: true });
      } finally {
        sdk.close();
      }
    });

    it('a watch of anything else closes with 1008', async () => {
      const app = await rig.start({ core: false });
      for (const frame of [
        { type: 'watch', what: 'badges' },
        { type: 'watch' },
        { type: 'watch', what: 7 },
      ]) {
        const client = await connect(app, 'u9');
        client.send(frame);
        expect((await client.waitClose()).code, JSON.stringify(frame)).toBe(CLOSE.policy);
      }
    });
  });
}

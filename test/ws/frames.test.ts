/**
 * Client frames (docs/protocol.md "Frames" and "Close codes"): a frame larger than
 * BUBBLE_WS_MAX_PAYLOAD closes with 1009, one that is not JSON text or of an unknown type with
 * 1008, a refused read answers an error frame and keeps the socket; each closes only the
 * connection that sent it: another socket of the same user keeps getting pushes.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '@bubble/test-utils';
import { CLOSE, ENGINES, follow, ingest, useEngine, type LiveApp } from './support.js';
import { connect, expectVersionsIncrease, ids, type Client } from './live-client.js';

const MAX_PAYLOAD = 4096;

/** A ping padded to exactly `bytes` bytes of UTF-8. */
function paddedPing(bytes: number): string {
  const empty = JSON.stringify({ type: 'ping', pad: '' });
  return JSON.stringify({ type: 'ping', pad: 'x'.repeat(bytes - empty.length) });
}

for (const engine of ENGINES) {
  describe(`WebSocket frames [${engine}]`, () => {
    const rig = useEngine(engine);

    /** Opens a socket of `user`, sends `frame`, and returns the close code it got. */
    async function closeCodeOf(
      app: LiveApp,
      user: string,
      send: (client: Client) => void,
      label: string,
    ): Promise<number> {
      const victim = await connect(app, user, label);
      send(victim);
      const { code } = await victim.waitClose();
      expect(victim.malformed).toEqual([]);
      return code;
    }

    it('bad frames close only their connection; the other sockets keep getting pushes', async () => {
      const app = await rig.start();
      const [author, user, other] = ids('f', 3) as [string, string, string];
      await follow(app, user, author);
      await follow(app, other, author);
      const bystander = await connect(app, user, 'bystander');
      const neighbour = await connect(app, other, 'neighbour');

      const cases: Array<{ name: string; code: number; send: (c: Client) => void }> = [
        {
          name: 'one byte over maxPayload',
          code: CLOSE.tooLarge,
          send: (c) => c.send(paddedPing(MAX_PAYLOAD + 1)),
        },
        { name: '1 MiB frame', code: CLOSE.tooLarge, send: (c) => c.send(paddedPing(1024 * 1024)) },
        {
          name: 'oversized binary',
          code: CLOSE.tooLarge,
          send: (c) => c.ws.send(Buffer.alloc(MAX_PAYLOAD * 4)),
        },
        { name: 'not JSON', code: CLOSE.policy, send: (c) => c.send('hello there') },
        { name: 'truncated JSON', code: CLOSE.policy, send: (c) => c.send('{"type":"ping"') },
        { name: 'empty text', code: CLOSE.policy, send: (c) => c.send('') },
        { name: 'unknown type', code: CLOSE.policy, send: (c) => c.send({ type: 'subscribe' }) },
        { name: 'no type', code: CLOSE.policy, send: (c) => c.send({ scope: 'all' }) },
        { name: 'type not a string', code: CLOSE.policy, send: (c) => c.send({ type: ['ping'] }) },
        { name: 'JSON number', code: CLOSE.policy, send: (c) => c.send('42') },
        { name: 'JSON null', code: CLOSE.policy, send: (c) => c.send('null') },
        { name: 'JSON array', code: CLOSE.policy, send: (c) => c.send('[{"type":"ping"}]') },
        { name: 'JSON string', code: CLOSE.policy, send: (c) => c.send('"ping"') },
        {
          name: 'binary frame holding valid JSON',
          code: CLOSE.policy,
          send: (c) => c.ws.send(Buffer.from('{"type":"ping"}')),
        },
      ];
      for (const c of cases) {
        const code = await closeCodeOf(app, user, c.send, c.name);
        expect(code, c.name).toBe(c.code);
        // the bystander of the same user is still served
        await bystander.roundTrip();
        expect(bystander.closed).toBeNull();
      }
      await waitFor(() => app.gateway.ws!.connections === 2, { message: 'closed sockets kept' });
      expect(await app.store.presence.isOnline(user)).toBe(true);

      // and still gets pushes, as does another user's socket
      await ingest(app, [{ author, id: 'p1', ts: Date.now() - 1000 }]);
      await bystander.waitBadge((b) => b.feed === 1);
      await neighbour.waitBadge((b) => b.feed === 1);
      for (const s of [bystander, neighbour]) {
        expectVersionsIncrease(s);
        expect(s.closed).toBeNull();
      }
    });

    it('a frame of exactly maxPayload bytes is accepted', async () => {
      const app = await rig.start({ core: false });
      const client = await connect(app, 'edge');
      const frame = paddedPing(MAX_PAYLOAD);
      expect(Buffer.byteLength(frame)).toBe(MAX_PAYLOAD);
      client.send(frame);
      await client.roundTrip();
      expect(client.frames.filter((f) => f.type === 'pong')).toHaveLength(2);
      expect(client.closed).toBeNull();
      // multi-byte characters count as bytes: 4096 characters of "é" are 8192 bytes
      client.send(JSON.stringify({ type: 'ping', pad: 'é'.repeat(MAX_PAYLOAD / 2) }));
      expect((await client.waitClose()).code).toBe(CLOSE.tooLarge);
    });

    it('a refused read answers an error frame and keeps the socket open', async () => {
      const app = await rig.start({ core: false });
      const client = await connect(app, 'reader');
      const refused: unknown[] = [
        { type: 'read' },
        { type: 'read', scope: 'nope' },
        { type: 'read', scope: 'feed', upTo: -1 },
        { type: 'read', scope: 'feed', upTo: 1.5 },
        { type: 'read', scope: 'feed', upTo: '123' },
        { type: 'read', scope: 'all', extra: true },
        { type: 'read', scope: 'conversation' },
        { type: 'read', scope: null },
      ];
      for (const frame of refused) {
        const before = client.frames.length;
        client.send(frame);
        await waitFor(() => client.frames.slice(before).find((f) => f.type === 'error'), {
          message: `no error frame for ${JSON.stringify(frame)}`,
        });
        const error = client.frames.slice(before).find((f) => f.type === 'error')!;
        expect(error, JSON.stringify(frame)).toMatchObject({ code: 'UB_ERR_BAD_REQUEST' });
        expect(Object.keys(error).sort()).toEqual(['code', 'message', 'type']);
        expect(client.closed).toBeNull();
      }
      await client.roundTrip();
      // the user id never comes from a frame: a read naming another user reads one's own badge
      client.send({ type: 'read', scope: 'all', user: 'someone-else' });
      await waitFor(() => client.frames.filter((f) => f.type === 'error').length > refused.length);
      expect(client.closed).toBeNull();
      expect(client.badges.every((b) => b.user === 'reader')).toBe(true);
    });
  });
}

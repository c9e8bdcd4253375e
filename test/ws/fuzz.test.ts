/**
 * Robustness of the WebSocket gateway against arbitrary clients (docs/protocol.md "Close
 * codes"): fast-check drives random frame sequences (strings, JSON values, objects with random
 * type/scope/upTo/token fields, huge strings, binary frames) over authenticated and
 * unauthenticated sockets. The gateway process never sees an unhandled error, every connection
 * either stays open (and answers a ping) or closes with a contract code, nothing leaks, and a
 * fresh socket is served afterwards. Also: clients that vanish (TCP reset) mid-upgrade or
 * mid-frame never take the process down.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { waitFor } from '@bubble/test-utils';
import { CLOSE, ENGINES, follow, ingest, tokenFor, useEngine, type LiveApp } from './support.js';
import { Client, collectProcessErrors, connect, nextLocalAddress } from './live-client.js';

type Frame = { kind: 'text'; data: string } | { kind: 'binary'; data: Uint8Array };

const text = (data: string): Frame => ({ kind: 'text', data });

const fieldValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(Number.MAX_SAFE_INTEGER),
  fc.jsonValue({ maxDepth: 2 }),
);

const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  // arbitrary text, including lone surrogates and control characters
  fc.string({ maxLength: 40, unit: 'binary' }).map(text),
  fc.string({ maxLength: 40 }).map(text),
  // any JSON value
  fc.jsonValue({ maxDepth: 3 }).map((v) => text(JSON.stringify(v) ?? 'null')),
  // objects shaped like frames, with random type/scope fields
  fc
    .record(
      {
        type: fc.oneof(
          fc.constantFrom('auth', 'read', 'ping', 'pong', 'badge', 'error', 'READ', 'Ping', ''),
          fc.string({ maxLength: 8 }),
          fieldValue,
        ),
        scope: fc.oneof(
          fc.constantFrom('feed', 'all', 'notices', 'conversation', 'reddot', 'FEED'),
          fieldValue,
        ),
        upTo: fc.oneof(fc.nat(), fc.integer({ min: -5, max: 5 }), fieldValue),
        token: fc.oneof(fc.string({ maxLength: 60 }), fieldValue),
        id: fieldValue,
        user: fc.constantFrom('fz0', 'fz1', 'someone'),
      },
      { requiredKeys: [] },
    )
    .map((o) => text(JSON.stringify(o))),
  // valid-looking frames, so the fuzz also exercises the happy paths
  fc.constantFrom(
    text('{"type":"ping"}'),
    text('{"type":"read","scope":"all"}'),
    text('{"type":"read","scope":"feed","upTo":0}'),
  ),
  // huge strings: around and far over maxPayload (4096)
  fc
    .integer({ min: 4000, max: 70_000 })
    .map((n) => text(`{"type":"ping","pad":"${'x'.repeat(n)}"}`)),
  fc.integer({ min: 4000, max: 70_000 }).map((n) => text('y'.repeat(n))),
  // binary frames
  fc.uint8Array({ maxLength: 64 }).map((data): Frame => ({ kind: 'binary', data })),
);

/** Frames an authenticated socket survives: pings and reads, valid or refused (error frame). */
const benignArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.constantFrom(
    text('{"type":"ping"}'),
    text('{"type":"read","scope":"all"}'),
    text('{"type":"read","scope":"feed"}'),
  ),
  fc.nat().map((upTo) => text(JSON.stringify({ type: 'read', scope: 'feed', upTo }))),
  fc
    .record(
      { scope: fieldValue, upTo: fieldValue, id: fieldValue, user: fc.constant('someone') },
      { requiredKeys: [] },
    )
    .map((o) => text(JSON.stringify({ type: 'read', ...o }))),
);

const scenarioArb = fc.record({
  /** header: Bearer on the upgrade; frame: a valid first auth frame; none: neither. */
  auth: fc.constantFrom('header', 'frame', 'none') as fc.Arbitrary<'header' | 'frame' | 'none'>,
  user: fc.constantFrom('fz0', 'fz1', 'fz2'),
  frames: fc.oneof(
    fc.array(frameArb, { minLength: 1, maxLength: 6 }),
    fc.array(benignArb, { minLength: 1, maxLength: 6 }),
    fc
      .tuple(fc.array(benignArb, { maxLength: 4 }), frameArb)
      .map(([benign, last]) => [...benign, last]),
  ),
});

type Scenario = { auth: 'header' | 'frame' | 'none'; user: string; frames: Frame[] };

/** Plays one scenario; returns once the socket answered a ping or was closed. */
async function play(
  app: LiveApp,
  scenario: Scenario,
  outcomes: Map<string, number>,
): Promise<void> {
  const token = scenario.auth === 'none' ? undefined : await tokenFor(scenario.user);
  const header = scenario.auth === 'header' ? token : undefined;
  const client = Client.open(app, { token: header, localAddress: nextLocalAddress() }, 'fuzz');
  const authenticated = scenario.auth !== 'none';
  try {
    await client.opened;
    if (scenario.auth === 'frame') client.send({ type: 'auth', token });
    if (authenticated) await client.waitBadge((b) => b.user === scenario.user);
    for (const frame of scenario.frames) {
      if (!client.isOpen) break;
      client.ws.send(frame.kind === 'text' ? frame.data : Buffer.from(frame.data), {
        binary: frame.kind === 'binary',
      });
    }
    // The sentinel: a ping is answered by an open, authenticated socket.
    if (client.isOpen) client.send({ type: 'ping' });
    await waitFor(() => client.closed || client.frames.some((f) => f.type === 'pong'), {
      timeoutMs: 8000,
      message: 'neither a pong nor a close',
    });
    expect(client.malformed, 'frames the server sent').toEqual([]);
    for (const frame of client.frames) {
      if (frame.type === 'error') expect(frame.code).toMatch(/^UB_ERR_[A-Z_]+$/);
      if (frame.type === 'badge') expect(frame.badge.user).toBe(scenario.user);
    }
    const outcome = client.closed ? String(client.closed.code) : 'open';
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    if (client.closed) {
      const allowed: number[] = authenticated
        ? [CLOSE.policy, CLOSE.tooLarge]
        : [CLOSE.policy, CLOSE.tooLarge, CLOSE.authFailed];
      expect(allowed, `closed with ${JSON.stringify(client.closed)}`).toContain(client.closed.code);
    } else {
      // still open: only an authenticated socket can be
      expect(authenticated).toBe(true);
    }
  } finally {
    client.ws.terminate();
  }
}

async function expectServedAfterwards(app: LiveApp): Promise<void> {
  // nothing leaks: every socket is gone and every user let go
  await waitFor(() => app.gateway.ws!.connections === 0, {
    timeoutMs: 10_000,
    message: 'sockets left behind',
  });
  await waitFor(() => app.gateway.liveUsers!.size === 0, { message: 'users still held' });
  // (letting a user go ends with an asynchronous setOffline)
  for (const user of ['fz0', 'fz1', 'fz2']) {
    await waitFor(async () => !(await app.store.presence.isOnline(user)), {
      message: `${user} is still online`,
    });
  }
  // and a fresh authenticated socket gets its badge and a push
  await follow(app, 'fresh', 'fresh-author');
  const fresh = await connect(app, 'fresh');
  await ingest(app, [{ author: 'fresh-author', id: 'p1', ts: Date.now() - 1000 }]);
  await fresh.waitBadge((b) => b.feed === 1);
  await fresh.roundTrip();
  expect(app.logs.filter((l) => l.level >= 50)).toEqual([]);
}

for (const engine of ENGINES) {
  describe(`WebSocket fuzz [${engine}]`, () => {
    const rig = useEngine(engine);

    it('random client frames never crash the gateway; closes use contract codes', async () => {
      const app = await rig.start();
      const outcomes = new Map<string, number>();
      const { errors } = await collectProcessErrors(() =>
        fc.assert(
          fc.asyncProperty(scenarioArb, (scenario) => play(app, scenario, outcomes)),
          { numRuns: engine === 'memory' ? 150 : 80 },
        ),
      );
      expect(errors.map(String)).toEqual([]);
      // the fuzz reached every outcome, not only the easy one
      const closes = [CLOSE.policy, CLOSE.tooLarge, CLOSE.authFailed].map(String);
      expect([...outcomes.keys()].sort()).toEqual([...closes, 'open'].sort());
      await expectServedAfterwards(app);
    }, 60_000);

    it('clients that reset mid-upgrade or mid-frame never take the process down', async () => {
      const app = await rig.start();
      const goodToken = await tokenFor('fz0');
      const upgrade = (authorization?: string) =>
        'GET /v1/ws HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
        (authorization !== undefined ? `Authorization: ${authorization}\r\n` : '') +
        '\r\n';
      /** A masked client frame header announcing `length` bytes, followed by a few of them. */
      const partialFrame = (length: number) => {
        const header = Buffer.from([0x81, 0xfe, (length >> 8) & 255, length & 255]);
        return Buffer.concat([header, randomBytes(4), Buffer.from('{"type":')]);
      };
      const scripts: Array<string | Buffer>[] = [
        [upgrade('Bearer not.a.token')], // refused 401 while the client is gone
        [upgrade(`Bearer ${goodToken}`)], // upgraded while the client is gone
        [upgrade()], // first-frame auth pending
        [upgrade(`Bearer ${goodToken}`), partialFrame(200)],
        [upgrade(), partialFrame(4000)],
        [upgrade('Bearer x').slice(0, 40)], // half a request head
      ];
      const { errors } = await collectProcessErrors(async () => {
        for (let round = 0; round < 5; round++) {
          await Promise.all(
            scripts.map(async (parts) => {
              const socket = net.connect({
                host: '127.0.0.1',
                port: app.port,
                localAddress: nextLocalAddress(),
              });
              socket.on('error', () => {});
              await new Promise<void>((resolve) => socket.once('connect', resolve));
              for (const part of parts) socket.write(part);
              // let part of it (or none) be handled, then vanish with a TCP reset
              if (round % 2 === 1) await new Promise<void>((resolve) => setImmediate(resolve));
              socket.resetAndDestroy();
            }),
          );
        }
        await expectServedAfterwards(app);
      });
      expect(errors.map(String)).toEqual([]);
    });
  });
}

/**
 * kill -9 of a gateway under SDK clients (docs/architecture.md "Live badges": a gateway that
 * dies lets its users lapse by TTL; docs/protocol.md: a lost connection reconnects, to another
 * gateway). Real processes on one real redis-server: gateway A (`bubble gateway`) and B
 * (`bubble all`: server, core and a gateway), both with a short BUBBLE_PRESENCE_TTL_MS. Three
 * users, each in a pool of its own, hold SDK sockets on A: two know both gateways
 * (`url: [A, B]`), one knows only A. After A is killed, the two reconnect to B with the badge the
 * platform sees — a post ingested while they were away included — and get the next post pushed
 * by B; they stay online. The third, whose app cannot reach any gateway, goes offline once the
 * presence A last renewed lapses: within the presence TTL of the kill.
 */
import { BubbleClient } from '@bubble/client';
import { waitFor } from '@bubble/test-utils';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import {
  Deployment,
  essentials,
  recordingFetch,
  recordingWebSocket,
  watch,
  type RequestRecord,
  type SocketRecord,
} from './processes.js';

const PRESENCE_TTL_MS = 4000;
/** Deadline slack for a loaded machine. */
const SLACK_MS = 10_000;

interface App {
  user: string;
  client: BubbleClient;
  sockets: SocketRecord[];
  requests: RequestRecord[];
  seen: ReturnType<typeof watch>;
}

describe('SDK clients of a gateway killed with SIGKILL', () => {
  let deployment: Deployment | undefined;
  const apps: App[] = [];

  beforeAll(() => buildOnce(), 300_000);

  afterEach(async () => {
    for (const app of apps.splice(0)) app.client.close();
    await deployment?.close();
    deployment = undefined;
  });

  it('reconnect to the other gateway with the right badge and get pushes; users left behind lapse within the presence TTL', async (ctx) => {
    const d = (deployment = await Deployment.start());
    ctx.onTestFailed(() => console.error(d.describe()));
    const ttl = { BUBBLE_PRESENCE_TTL_MS: String(PRESENCE_TTL_MS) };
    const [b, a] = await Promise.all([d.spawn('all', ttl), d.spawn('gateway', ttl)]);
    await d.waitSweeping(b!);
    const gatewayA = a!;
    const gatewayB = b!;
    const [mover1, mover2, stranded, author] = d.usersInOwnPools('kill', 4) as [
      string,
      string,
      string,
      string,
    ];
    for (const user of [mover1, mover2, stranded]) await d.follow(gatewayB, user, author);

    const open = async (user: string, urls: string[]): Promise<App> => {
      const sockets: SocketRecord[] = [];
      const requests: RequestRecord[] = [];
      const client = new BubbleClient({
        url: urls,
        token: await d.token(user),
        WebSocket: recordingWebSocket(sockets),
        fetch: recordingFetch(requests),
        backoffBaseMs: 200,
        backoffMaxMs: 2000,
      });
      const app = { user, client, sockets, requests, seen: watch(client) };
      apps.push(app);
      client.start();
      return app;
    };
    const movers = [
      await open(mover1, [gatewayA.url, gatewayB.url]),
      await open(mover2, [gatewayA.url, gatewayB.url]),
    ];
    const left = await open(stranded, [gatewayA.url]);
    const all = [...movers, left];

    // Everyone is on A, online, and gets A's pushes.
    for (const app of all) {
      await waitFor(() => app.client.state === 'open', {
        timeoutMs: 20_000,
        message: `${app.user} never connected: ${JSON.stringify(app.sockets)}`,
      });
      expect(app.sockets.map((s) => s.url)).toEqual([gatewayA.wsUrl]);
      expect(await d.onlineInPool(gatewayB, app.user)).toBe(1);
    }
    await d.post(gatewayB, author, 'p1');
    for (const app of all) {
      await waitFor(() => app.client.badge?.feed === 1, {
        timeoutMs: 20_000,
        message: `${app.user}: no push of p1 from A`,
      });
    }

    await gatewayA.kill();
    // A renewed nothing after this.
    const diedAt = Date.now();
    expect(gatewayA.exit?.signal).toBe('SIGKILL');
    // Still online: what A renewed lasts up to a TTL.
    expect(await d.onlineInPool(gatewayB, stranded)).toBe(1);
    // A post while the clients are between gateways.
    await d.post(gatewayB, author, 'p2');

    // The movers are on B, with the badge the platform sees (p2 included), without polling.
    for (const app of movers) {
      await waitFor(
        () =>
          app.client.state === 'open' &&
          app.sockets.at(-1)!.url === gatewayB.wsUrl &&
          app.client.badge?.feed === 2,
        {
          timeoutMs: 20_000,
          message: `${app.user} not back with feed 2: state ${app.client.state}, badge ${JSON.stringify(app.client.badge)}, sockets ${JSON.stringify(app.sockets)}`,
        },
      );
      expect(essentials(app.client.badge!)).toEqual(essentials(await d.badge(gatewayB, app.user)));
      expect(app.sockets.filter((s) => s.openedAt !== undefined).map((s) => s.url)).toEqual([
        gatewayA.wsUrl,
        gatewayB.wsUrl,
      ]);
      expect(app.requests, `${app.user} polled`).toEqual([]);
      expect(app.seen.states.map((s) => s.state)).toEqual([
        'connecting',
        'open',
        'connecting',
        'open',
      ]);
    }

    // One presence TTL after A died, everything A renewed has lapsed (GET /v1/cluster counts the
    // presence entries that expire after its own now): the user left behind is offline, the
    // movers are online because B holds them.
    await waitFor(() => Date.now() > diedAt + PRESENCE_TTL_MS, {
      timeoutMs: PRESENCE_TTL_MS + SLACK_MS,
    });
    expect(await d.onlineInPool(gatewayB, stranded), `${stranded} still online`).toBe(0);
    for (const app of movers) expect(await d.onlineInPool(gatewayB, app.user)).toBe(1);
    expect(left.client.state).not.toBe('open');
    expect(left.sockets.every((s) => s.url === gatewayA.wsUrl)).toBe(true);

    // A post after the reconnect is pushed by B.
    await d.post(gatewayB, author, 'p3');
    for (const app of movers) {
      await waitFor(() => app.client.badge?.feed === 3, {
        timeoutMs: 20_000,
        message: `${app.user}: no push of p3 from B`,
      });
      expect(essentials(app.client.badge!)).toEqual(essentials(await d.badge(gatewayB, app.user)));
      expect(app.client.state).toBe('open');
      expect(app.requests, `${app.user} polled`).toEqual([]);
    }
    expect(left.client.badge!.feed).toBe(1);
  }, 150_000);
});

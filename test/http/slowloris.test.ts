/**
 * Slowloris against the gateway (issue 19): headers dribbled forever, on a plain request and on
 * a WebSocket upgrade, are cut off by the headers timeout (10 s); a chunked body that never ends
 * by the request timeout (30 s). Meanwhile other clients are answered as usual. Real sockets,
 * one byte at a time, on a gateway over the memory engine.
 */
import { connect, type Socket } from 'node:net';
import { HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from '@bubble/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, platform, useApps, type App } from './support.js';

/** Writes `head` at once, then one byte of `drip` every 250 ms until the socket closes. */
function dribble(port: number, head: string, drip: string) {
  const socket: Socket = connect(port, '127.0.0.1');
  const startedAt = Date.now();
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (answer += chunk));
  socket.on('error', () => {});
  const closed = new Promise<{ afterMs: number; answer: string }>((resolve) => {
    socket.on('close', () => resolve({ afterMs: Date.now() - startedAt, answer }));
  });
  socket.write(head);
  let next = 0;
  const timer = setInterval(() => {
    if (socket.destroyed) return clearInterval(timer);
    socket.write(drip[next++ % drip.length]!);
  }, 250);
  void closed.then(() => clearInterval(timer));
  return closed;
}

describe('slowloris', () => {
  const apps = useApps('memory', 'slowloris');
  let app: App;

  beforeAll(async () => {
    app = await apps.start();
  });

  afterAll(async () => {
    await app?.close();
  });

  it('headers dribbled forever (request and upgrade) and an endless chunked body are cut off by the stated timeouts', async () => {
    const headers = dribble(
      app.port,
      'GET /v1/badge HTTP/1.1\r\nHost: x\r\n',
      'X-Slow: aaaaaaaa\r\n',
    );
    const upgrade = dribble(
      app.port,
      'GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n',
      'X-Slow: aaaaaaaa\r\n',
    );
    const body = dribble(
      app.port,
      `POST /v1/posts HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${API_KEY}\r\n` +
        'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n[\r\n',
      '1\r\n \r\n',
    );
    // Others are answered while the three hang on.
    const reply = await platform(app, 'GET', '/v1/users/alice/follows');
    expect(reply.status).toBe(200);

    // Node checks the timeouts every second (connectionsCheckingInterval); the rest is a loaded machine.
    const slack = 10_000;
    for (const cut of [await headers, await upgrade]) {
      expect(cut.afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 500);
      expect(cut.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + slack);
      expect(cut.answer === '' || cut.answer.startsWith('HTTP/1.1 408')).toBe(true);
    }
    const cutBody = await body;
    expect(cutBody.afterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 500);
    expect(cutBody.afterMs).toBeLessThan(REQUEST_TIMEOUT_MS + slack);
    // Nothing of the endless batch was stored.
    const stored = await platform(app, 'GET', '/v1/users/alice/badge');
    expect(stored.status).toBe(200);
  }, 60_000);
});

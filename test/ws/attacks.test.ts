/**
 * Known attacks on WebSocket servers, against a real `bubble gateway` process (issue 19):
 * CVE-2024-37890 (an upgrade carrying 2,000 headers crashed `ws` < 8.17.1) and a flood of
 * one-byte fragments that never finishes a message (CVE-2026-48779). 50 attackers of each kind:
 * the gateway survives, every attacking connection is refused or closed, its RSS grows less than
 * 20 MB, and a client that was connected throughout still gets its pushes.
 */
import { readFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { buildOnce } from '../support/build.js';
import { Deployment } from './processes.js';

const ATTACKERS = 50;

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** An upgrade request with `count` extra headers; resolves with what came back before close. */
function manyHeaderUpgrade(port: number, count: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
    const extra = Array.from({ length: count }, (_, i) => `X-Header-${i}: ${'v'.repeat(8)}\r\n`);
    socket.end(
      'GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
        `${extra.join('')}Sec-WebSocket-Protocol: a, b\r\n\r\n`,
    );
  });
}

/** An authenticated socket that sends one-byte fragments of a message it never finishes. */
async function fragmentFlood(gateway: RoleProcess, token: string): Promise<number> {
  const ws = new WebSocket(`ws://127.0.0.1:${gateway.port}/v1/ws`, {
    headers: { authorization: `Bearer ${token}` },
  });
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('close', () => reject(new Error('closed before opening')));
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  for (let i = 0; i < 2_000 && ws.readyState === WebSocket.OPEN; i++) {
    ws.send('{', { fin: false });
    if (i % 100 === 99) await new Promise((r) => setImmediate(r));
  }
  return closed;
}

describe('known attacks on the gateway', () => {
  let deployment: Deployment;
  let gateway: RoleProcess;

  beforeAll(async () => {
    await buildOnce();
    deployment = await Deployment.start();
    await deployment.spawn('server');
    await deployment.spawn('core');
    gateway = await deployment.spawn('gateway', { BUBBLE_WS_CONNECT_BURST: '1000' });
  }, 300_000);

  afterAll(async () => {
    await deployment?.close();
  });

  it('survives 50 upgrades of 2,000 headers and 50 fragment floods; RSS grows < 20 MB; others still get pushes', async () => {
    const bystander = 'atk-bystander';
    const author = 'atk-author';
    await deployment.follow(gateway, bystander, author);
    const watcher = new WebSocket(`ws://127.0.0.1:${gateway.port}/v1/ws`, {
      headers: { authorization: `Bearer ${await deployment.token(bystander)}` },
    });
    const feeds: number[] = [];
    watcher.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { type: string; badge?: { feed: number } };
      if (frame.type === 'badge') feeds.push(frame.badge!.feed);
    });
    await waitFor(() => feeds.length > 0, { message: 'the bystander got no first badge' });

    // Warm the process's paths once, then take the baseline.
    await manyHeaderUpgrade(gateway.port, 2_000);
    await fragmentFlood(gateway, await deployment.token('atk-warm'));
    const before = rssBytes(gateway.child.pid!);

    const headerAnswers = await Promise.all(
      Array.from({ length: ATTACKERS }, () => manyHeaderUpgrade(gateway.port, 2_000)),
    );
    for (const answer of headerAnswers) {
      // Refused before any 101 (431 from the parser, or 4xx from the gateway), or cut.
      expect(answer.startsWith('HTTP/1.1 101')).toBe(false);
    }
    const tokens = await Promise.all(
      Array.from({ length: ATTACKERS }, (_, i) => deployment.token(`atk-flood${i}`)),
    );
    const closeCodes = await Promise.all(tokens.map((token) => fragmentFlood(gateway, token)));
    for (const code of closeCodes) expect([1008, 1009, 1006]).toContain(code);

    expect(gateway.exit).toBeNull();
    const after = rssBytes(gateway.child.pid!);
    expect(after - before, `RSS ${before} → ${after}`).toBeLessThan(20 * 1024 * 1024);

    // The bystander, connected all along, is pushed its next count.
    await deployment.post(gateway, author, 'after-attacks');
    await waitFor(() => feeds.at(-1) === 1, {
      timeoutMs: 15_000,
      message: 'the bystander was not pushed after the attacks',
    });
    expect(watcher.readyState).toBe(WebSocket.OPEN);
    watcher.close();
  }, 180_000);
});

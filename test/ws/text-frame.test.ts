/**
 * The gateway writes its text frames itself (writeTextFrame), one write per frame, beside ws's
 * own pings: a real `ws` client on loopback must read each as the text it was, at every length
 * form of the header (7-bit, 16-bit, 64-bit) and for non-ASCII text, in order with ws's frames.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { textFrameHeader, writeTextFrame } from '../../packages/gateway/src/live/text-frame.js';
import { waitFor } from '@bubble/test-utils';

describe('writeTextFrame', () => {
  let server: Server | undefined;
  let client: WebSocket | undefined;
  afterEach(async () => {
    client?.terminate();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(null));
  });

  it('is read by a ws client as the text written, at every header length, between pings', async () => {
    const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
    server = createServer();
    const accepted = new Promise<{ ws: WebSocket; socket: Duplex }>((resolve) => {
      server!.on('upgrade', (req, socket, head) =>
        wss.handleUpgrade(req, socket, head, (ws) => resolve({ ws, socket })),
      );
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
    const received: string[] = [];
    let pings = 0;
    client.on('message', (data, isBinary) => {
      expect(isBinary).toBe(false);
      received.push(data.toString());
    });
    client.on('ping', () => pings++);
    const { ws, socket } = await accepted;

    const texts = [
      '',
      'x',
      'a'.repeat(125),
      'b'.repeat(126),
      'c'.repeat(65_535),
      'd'.repeat(65_536),
      'e'.repeat(200_000),
      '{"type":"badge","badge":{"user":"ü","reddots":["日本"]}}',
      '😀'.repeat(40),
    ];
    for (const text of texts) {
      writeTextFrame(socket, text);
      ws.ping();
      ws.send('via ws');
    }
    await waitFor(() => received.length === texts.length * 2 && pings === texts.length, {
      message: 'every frame arrived',
    });
    expect(received).toEqual(texts.flatMap((text) => [text, 'via ws']));
    expect(ws.bufferedAmount).toBe(0);
  });

  it('writes the header of each length form', () => {
    const bytes = (header: string) => [...Buffer.from(header, 'latin1')];
    expect(bytes(textFrameHeader(0))).toEqual([0x81, 0]);
    expect(bytes(textFrameHeader(125))).toEqual([0x81, 125]);
    expect(bytes(textFrameHeader(126))).toEqual([0x81, 126, 0, 126]);
    expect(bytes(textFrameHeader(65_535))).toEqual([0x81, 126, 0xff, 0xff]);
    expect(bytes(textFrameHeader(65_536))).toEqual([0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]);
  });
});

import {
  BubbleClient,
  Emitter,
  type WebSocketConstructor,
  type WebSocketLike,
} from '@bubble/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { until } from '../client/support.js';

afterEach(() => {
  vi.unstubAllGlobals();
});

/** A WebSocket that only notes the URLs it is opened on. */
function recordingSocket(urls: string[]): WebSocketConstructor {
  return class implements WebSocketLike {
    onopen = null;
    onmessage = null;
    onclose = null;
    onerror = null;
    constructor(url: string) {
      urls.push(url);
    }
    send(): void {}
    close(): void {}
  };
}

describe('BubbleClient options', () => {
  it.each([
    ['http://gw.example:8080', 'ws://gw.example:8080/v1/ws'],
    ['https://gw.example/', 'wss://gw.example/v1/ws'],
    ['https://example.com/bubble//', 'wss://example.com/bubble/v1/ws'],
    ['wss://gw.example', 'wss://gw.example/v1/ws'],
  ])('derives the socket URL from %s', async (url, expected) => {
    const urls: string[] = [];
    const client = new BubbleClient({ url, token: 't', WebSocket: recordingSocket(urls) });
    client.start();
    await until(() => urls.length > 0, 'a socket');
    client.close();
    expect(urls).toEqual([expected]);
  });

  it('defaults to the global WebSocket', async () => {
    const urls: string[] = [];
    vi.stubGlobal('WebSocket', recordingSocket(urls));
    const client = new BubbleClient({ url: 'http://h', token: 't' });
    client.start();
    await until(() => urls.length > 0, 'a socket');
    client.close();
    expect(urls).toEqual(['ws://h/v1/ws']);
  });

  it('says clearly when there is neither WebSocket nor fetch', () => {
    vi.stubGlobal('WebSocket', undefined);
    vi.stubGlobal('fetch', undefined);
    expect(() => new BubbleClient({ url: 'http://h', token: 't' })).toThrow(
      /neither WebSocket nor fetch.*options\.WebSocket/,
    );
  });

  it('needs a token or getToken', () => {
    expect(() => new BubbleClient({ url: 'http://h', WebSocket: recordingSocket([]) })).toThrow(
      /token or options\.getToken/,
    );
  });

  it('only polls without a WebSocket, and reads over the socket only without fetch', async () => {
    vi.stubGlobal('WebSocket', undefined);
    const fetch = vi.fn(() => new Promise<never>(() => {}));
    const polling = new BubbleClient({ url: 'http://h', token: 't', fetch });
    polling.start();
    expect(polling.state).toBe('polling');
    polling.close();

    vi.stubGlobal('fetch', undefined);
    const socketOnly = new BubbleClient({
      url: 'http://h',
      token: 't',
      WebSocket: recordingSocket([]),
    });
    await expect(socketOnly.read({ scope: 'all' })).rejects.toMatchObject({ code: 'unavailable' });
  });
});

describe('Emitter', () => {
  class Bus extends Emitter<{ n: number; s: string }> {
    fire<K extends 'n' | 's'>(type: K, value: { n: number; s: string }[K]): void {
      this.emit(type, value);
    }
  }

  it('calls listeners in order; off and the returned function unsubscribe', () => {
    const bus = new Bus();
    const seen: string[] = [];
    const a = (n: number) => seen.push(`a${n}`);
    const unsubscribe = bus.on('n', (n) => seen.push(`b${n}`));
    bus.on('n', a);
    bus.on('s', (s) => seen.push(s));
    bus.fire('n', 1);
    bus.off('n', a);
    unsubscribe();
    bus.fire('n', 2);
    bus.fire('s', 'x');
    expect(seen).toEqual(['b1', 'a1', 'x']);
  });

  it('a listener that throws does not stop the others; its error is rethrown from a new task', () => {
    const bus = new Bus();
    const seen: number[] = [];
    const boom = new Error('listener bug');
    bus.on('n', () => {
      throw boom;
    });
    bus.on('n', (n) => seen.push(n));
    const deferred: (() => void)[] = [];
    const realSetTimeout = globalThis.setTimeout;
    globalThis.setTimeout = ((fn: () => void) => deferred.push(fn)) as unknown as typeof setTimeout;
    try {
      bus.fire('n', 7);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    expect(seen).toEqual([7]);
    expect(deferred).toHaveLength(1);
    expect(() => deferred[0]!()).toThrow(boom);
  });
});

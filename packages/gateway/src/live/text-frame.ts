import type { Duplex } from 'node:stream';

/**
 * Writes `text` to a WebSocket connection's socket as one unmasked, final text frame (RFC 6455
 * §5.2) in one write. `ws.send` writes the same bytes as a header Buffer and the payload, corked
 * into a writev; one string written as latin1 (an ASCII payload, as a badge's always is) skips
 * the Buffer, the cork and the writev, the part of a push the gateway can still save on
 * (docs/benchmarks.md "The push path"). Only for connections without compression: ws then
 * writes its own frames (pings, pongs, close) whole and at once, never queued, so frames
 * written here and there never interleave, and `ws.bufferedAmount` counts these bytes too.
 */
export function writeTextFrame(socket: Duplex, text: string): void {
  const length = Buffer.byteLength(text, 'utf8');
  if (length === text.length) {
    writeAsciiTextFrame(socket, text);
    return;
  }
  const header = textFrameHeader(length);
  const frame = Buffer.allocUnsafe(header.length + length);
  frame.write(header, 0, 'latin1');
  frame.write(text, header.length, 'utf8');
  socket.write(frame);
}

/** writeTextFrame of a text known to be ASCII (a pushed badge's): its length is its bytes. */
export function writeAsciiTextFrame(socket: Duplex, text: string): void {
  socket.write(textFrameHeader(text.length) + text, 'latin1');
}

const FIN_TEXT = 0x81;

/** The header of an unmasked final text frame of `length` payload bytes, one char per byte. */
export function textFrameHeader(length: number): string {
  if (length < 126) return String.fromCharCode(FIN_TEXT, length);
  if (length < 0x10000) return String.fromCharCode(FIN_TEXT, 126, length >>> 8, length & 0xff);
  // A 64-bit length; frames here stay far below 2^32 bytes (BUBBLE_WS_MAX_PAYLOAD).
  return String.fromCharCode(
    FIN_TEXT,
    127,
    0,
    0,
    0,
    0,
    (length >>> 24) & 0xff,
    (length >>> 16) & 0xff,
    (length >>> 8) & 0xff,
    length & 0xff,
  );
}

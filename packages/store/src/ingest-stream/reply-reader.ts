import { CR } from '../redis/resp-writer.js';
import { DOLLAR, MINUS, STAR } from './resp-reply.js';

export const NEED_MORE = Symbol('need more');

/** Node's own slicers, without Buffer#toString's checks of its arguments. */
interface Slicing {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
}

export class ReplyReader {
  pos = 0;

  constructor(private readonly data: Buffer) {}

  /** The integer after a type byte at `pos`, up to CRLF; moves past the line. */
  line(from: number): number {
    const data = this.data;
    let at = this.pos + from;
    let negative = false;
    if (data[at] === MINUS) {
      negative = true;
      at++;
    }
    let value = 0;
    for (;;) {
      const byte = data[at];
      if (byte === undefined) throw NEED_MORE;
      if (byte === CR) break;
      value = value * 10 + (byte - 0x30);
      at++;
    }
    if (at + 1 >= data.length) throw NEED_MORE;
    this.pos = at + 2;
    return negative ? -value : value;
  }

  arrayLength(): number {
    const type = this.data[this.pos];
    if (type === undefined) throw NEED_MORE;
    if (type !== STAR) throw new Error('Connection is closed. (an array was expected)');
    return this.line(1);
  }

  skipBulk(): void {
    this.bulkStart();
  }

  /** An entry id: ASCII digits and a dash. */
  id(): string {
    const start = this.bulkStart();
    if (start < 0) throw new Error('Connection is closed. (an entry without an id)');
    return (this.data as unknown as Slicing).latin1Slice(start, this.pos - 2);
  }

  /**
   * A field name or value. What every post entry has ("v", "1", "op", "post", "body") is a
   * shared string instead of one decoded each time.
   */
  field(): string {
    const start = this.bulkStart();
    if (start < 0) return '';
    const end = this.pos - 2;
    const data = this.data;
    switch (end - start) {
      case 1:
        if (data[start] === 0x76) return 'v';
        if (data[start] === 0x31) return '1';
        break;
      case 2:
        if (data[start] === 0x6f && data[start + 1] === 0x70) return 'op';
        break;
      case 4:
        if (data[start + 1] === 0x6f) {
          const first = data[start];
          if (first === 0x70 && data[start + 2] === 0x73 && data[start + 3] === 0x74) return 'post';
          if (first === 0x62 && data[start + 2] === 0x64 && data[start + 3] === 0x79) return 'body';
        }
        break;
    }
    return (data as unknown as Slicing).utf8Slice(start, end);
  }

  /** Moves past the next bulk string; where its bytes start, or -1 for a null one. */
  private bulkStart(): number {
    const type = this.data[this.pos];
    if (type === undefined) throw NEED_MORE;
    if (type !== DOLLAR) throw new Error('Connection is closed. (a bulk string was expected)');
    const length = this.line(1);
    if (length < 0) return -1;
    const start = this.pos;
    if (start + length + 2 > this.data.length) throw NEED_MORE;
    this.pos = start + length + 2;
    return start;
  }
}

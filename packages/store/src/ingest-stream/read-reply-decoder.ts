import { CR } from '../redis/resp-writer.js';
import type { ClaimedIngestEntry } from './ingest-stream.js';
import { INCOMPLETE, MINUS, type Decoded, type ReplyDecoder } from './resp-reply.js';
import { NEED_MORE, ReplyReader } from './reply-reader.js';

/**
 * The reply of an XREADGROUP of one stream: null (nothing new within the block), or
 * [[key, [[id, [field, value, …] | null], …]]], as entries with one delivery (new ones). A
 * reply of 1,000 entries spans several socket reads: each call goes on from the last whole
 * entry of the call before, given the same bytes plus what came since.
 */
export class ReadReplyDecoder implements ReplyDecoder<ClaimedIngestEntry[] | null> {
  private entries: ClaimedIngestEntry[] | undefined;
  private count = 0;
  /** Where the next entry starts, once the header is read. */
  private resumeAt = 0;

  /** The bytes before the next entry, which the next call is given no more. */
  consumed(): number {
    const done = this.resumeAt;
    this.resumeAt = 0;
    return done;
  }

  decode(data: Buffer): Decoded<ClaimedIngestEntry[] | null> {
    const reader = new ReplyReader(data);
    try {
      if (this.entries === undefined) {
        const type = data[0];
        if (type === undefined) return INCOMPLETE;
        if (type === MINUS) {
          const lineEnd = data.indexOf(CR, 1);
          if (lineEnd < 0 || lineEnd + 1 >= data.length) return INCOMPLETE;
          return { error: data.toString('utf8', 1, lineEnd), end: lineEnd + 2 };
        }
        const streams = reader.arrayLength();
        if (streams < 0) return { value: null, end: reader.pos };
        if (streams !== 1) {
          throw new Error(`Connection is closed. (XREADGROUP of ${streams} streams)`);
        }
        if (reader.arrayLength() !== 2)
          throw new Error('Connection is closed. (a malformed reply)');
        reader.skipBulk();
        this.count = reader.arrayLength();
        this.entries = [];
        this.resumeAt = reader.pos;
      }
      reader.pos = this.resumeAt;
      const entries = this.entries;
      while (entries.length < this.count) {
        if (reader.arrayLength() !== 2)
          throw new Error('Connection is closed. (a malformed entry)');
        const id = reader.id();
        const n = reader.arrayLength();
        // An entry deleted while pending comes back without fields.
        const fields: string[] = n < 0 ? [] : new Array<string>(n);
        for (let f = 0; f < n; f++) fields[f] = reader.field();
        entries.push({ id, fields, deliveries: 1 });
        this.resumeAt = reader.pos;
      }
      return { value: entries, end: reader.pos };
    } catch (err) {
      if (err === NEED_MORE) return INCOMPLETE;
      throw err;
    }
  }
}

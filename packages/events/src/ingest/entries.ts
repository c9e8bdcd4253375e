import {
  PLATFORM_OP_NAMES,
  PLATFORM_OP_VERSIONS,
  parsePlatformOp,
  type ParsedPlatformOp,
} from '@bubble/badges';
import {
  BubbleError,
  LIMITS,
  isWellFormedPost,
  parseJsonText,
  type MessageInput,
  type PostInput,
} from '@bubble/protocol';
import type { ClaimedIngestEntry } from '@bubble/store';

/** An entry in hand: its stream entry, its deliveries, and its op (or why it has none). */
export interface HeldEntry {
  entry: ClaimedIngestEntry;
  /** The entry's op as a metric label: an op of api.md, or 'unknown' (bounded cardinality). */
  op: string;
  parsed: ParsedPlatformOp | undefined;
  invalid: unknown;
}

/** What one call applies: consecutive posts, consecutive messages of one conversation, or one op. */
export type Segment =
  | { kind: 'posts'; held: HeldEntry[]; posts: PostInput[] }
  | { kind: 'messages'; held: HeldEntry[]; conversation: string; messages: MessageInput[] }
  | { kind: 'call'; held: [HeldEntry]; parsed: Extract<ParsedPlatformOp, { kind: 'call' }> };

/** Reads `v`, `op` and `body` of an entry and validates the op as its HTTP call would be. */
export function parseIngestEntry(fields: readonly string[]): ParsedPlatformOp {
  let v: string | undefined;
  let op: string | undefined;
  let body: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i];
    if (name === 'v') v = fields[i + 1];
    else if (name === 'op') op = fields[i + 1];
    else if (name === 'body') body = fields[i + 1];
  }
  if (v === undefined || !PLATFORM_OP_VERSIONS.includes(v)) {
    throw new BubbleError(
      'UB_ERR_BAD_REQUEST',
      `unknown v ${JSON.stringify((v ?? '(missing)').slice(0, 16))}; this bubble reads v ${PLATFORM_OP_VERSIONS.join(', ')}`,
    );
  }
  if (op === undefined) throw new BubbleError('UB_ERR_BAD_REQUEST', 'the entry has no op');
  if (body === undefined) throw new BubbleError('UB_ERR_BAD_REQUEST', 'the entry has no body');
  // A UTF-16 unit is at most 3 UTF-8 bytes: only a long text needs counting.
  if (body.length * 3 > LIMITS.maxBodyBytes && Buffer.byteLength(body) > LIMITS.maxBodyBytes) {
    throw new BubbleError(
      'UB_ERR_TOO_LARGE',
      `the body is larger than ${LIMITS.maxBodyBytes} bytes`,
    );
  }
  if (op === 'post') {
    const post = onePostText(body);
    if (post) return { kind: 'posts', op: 'post', posts: [post] };
  }
  const json = parseJsonText(body);
  return (op === 'post' && singlePost(json)) || parsePlatformOp(op, json);
}

/**
 * The op table's answer for a body that is one well-formed post, without the schema's cost (a
 * platform's write path appends one post an entry, so this is most entries); anything else,
 * valid or not, is left to the schema and its errors.
 */
function singlePost(json: unknown): ParsedPlatformOp | undefined {
  return isWellFormedPost(json) ? { kind: 'posts', op: 'post', posts: [json] } : undefined;
}

/**
 * A body written exactly as `JSON.stringify({author, id, ts})` writes a valid post, read
 * without JSON.parse (one parse per entry was the largest cost of a read after its decoding):
 * an id of ID_PATTERN has nothing to unescape, so the captures are what JSON.parse would give.
 * Any other text (spaces, another key order, escapes) goes to JSON.parse and singlePost.
 */
const ONE_POST_TEXT =
  /^\{"author":"([A-Za-z0-9_.:@-]{1,64})","id":"([A-Za-z0-9_.:@-]{1,64})","ts":(0|[1-9][0-9]{0,15})\}$/;

function onePostText(body: string): PostInput | undefined {
  const match = ONE_POST_TEXT.exec(body);
  if (match === null) return undefined;
  const ts = Number(match[3]);
  if (!Number.isSafeInteger(ts)) return undefined;
  return { author: match[1]!, id: match[2]!, ts };
}

const KNOWN_OPS: ReadonlySet<string> = new Set<string>(PLATFORM_OP_NAMES);

export function holdEntry(entry: ClaimedIngestEntry): HeldEntry {
  let op = '';
  for (let i = 0; i + 1 < entry.fields.length; i += 2) {
    if (entry.fields[i] === 'op') op = entry.fields[i + 1]!;
  }
  op = KNOWN_OPS.has(op) ? op : 'unknown';
  try {
    return { entry, op, parsed: parseIngestEntry(entry.fields), invalid: undefined };
  } catch (err) {
    return { entry, op, parsed: undefined, invalid: err };
  }
}

/**
 * Cuts valid entries, in their order, into the calls that apply them: runs of posts up to the
 * HTTP batch limit, runs of one conversation's messages up to its limit, every other op alone.
 */
export function segmentsOf(held: readonly HeldEntry[]): Segment[] {
  const segments: Segment[] = [];
  for (const one of held) {
    const parsed = one.parsed;
    if (!parsed) continue;
    const last = segments[segments.length - 1];
    if (parsed.kind === 'posts') {
      if (
        last?.kind === 'posts' &&
        last.posts.length + parsed.posts.length <= LIMITS.maxPostsPerBatch
      ) {
        last.held.push(one);
        last.posts.push(...parsed.posts);
      } else {
        segments.push({ kind: 'posts', held: [one], posts: [...parsed.posts] });
      }
    } else if (parsed.kind === 'messages') {
      if (
        last?.kind === 'messages' &&
        last.conversation === parsed.conversation &&
        last.messages.length + parsed.messages.length <= LIMITS.maxMessagesPerBatch
      ) {
        last.held.push(one);
        last.messages.push(...parsed.messages);
      } else {
        segments.push({
          kind: 'messages',
          held: [one],
          conversation: parsed.conversation,
          messages: [...parsed.messages],
        });
      }
    } else {
      segments.push({ kind: 'call', held: [one], parsed });
    }
  }
  return segments;
}

/** A segment of one entry, for applying a refused merged batch entry by entry. */
export function singleSegment(one: HeldEntry): Segment {
  return segmentsOf([one])[0]!;
}

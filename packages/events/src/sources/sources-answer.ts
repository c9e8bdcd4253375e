import { isValidId, ownValue, type SourcesAnswer } from '@bubble/protocol';

/** The most follows and topic follows one user's entry may carry (the store's follow caps). */
export interface SourcesCaps {
  follows: number;
  topics: number;
}

/** The answer's `users` object, or why the body is not an answer at all. */
export type SourcesBody =
  { ok: true; users: Readonly<Record<string, unknown>> } | { ok: false; error: string };

/** The result of checking one user's entry against the grammar and the caps. */
export type SourcesEntryCheck = { ok: true; answer: SourcesAnswer } | { ok: false; why: string };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{"users":{…}}` or an error saying what it is instead; unknown top-level keys are ignored. */
export function parseSourcesBody(text: string): SourcesBody {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, error: 'the answer is not JSON' };
  }
  if (!isPlainObject(body)) return { ok: false, error: 'the answer is not a JSON object' };
  const users = ownValue(body, 'users');
  if (!isPlainObject(users)) return { ok: false, error: 'the answer has no "users" object' };
  return { ok: true, users };
}

/** An entry absent from the answer: the user follows nothing. */
const LEFT_OUT: SourcesEntryCheck = { ok: true, answer: { follows: [], topics: [] } };

/**
 * One user's entry (`entry` undefined when the answer left the user out). `follows` and `topics`
 * are required arrays of ids, de-duplicated, each within its cap; `readAt` a non-negative safe
 * integer, `noticesSeen` a positive one, either absent or null when unknown; other keys ignored.
 */
export function checkSourcesEntry(entry: unknown, caps: SourcesCaps): SourcesEntryCheck {
  if (entry === undefined) return LEFT_OUT;
  if (!isPlainObject(entry)) return { ok: false, why: 'the entry is not an object' };
  const follows = idList(ownValue(entry, 'follows'), 'follows', caps.follows);
  if (typeof follows === 'string') return { ok: false, why: follows };
  const topics = idList(ownValue(entry, 'topics'), 'topics', caps.topics);
  if (typeof topics === 'string') return { ok: false, why: topics };
  const answer: SourcesAnswer = { follows, topics };
  const readAt = ownValue(entry, 'readAt');
  if (readAt !== undefined && readAt !== null) {
    if (!Number.isSafeInteger(readAt) || (readAt as number) < 0)
      return { ok: false, why: 'readAt is not a non-negative integer of ms' };
    answer.readAt = readAt as number;
  }
  const noticesSeen = ownValue(entry, 'noticesSeen');
  if (noticesSeen !== undefined && noticesSeen !== null) {
    if (!Number.isSafeInteger(noticesSeen) || (noticesSeen as number) < 1)
      return { ok: false, why: 'noticesSeen is not a positive integer' };
    answer.noticesSeen = noticesSeen as number;
  }
  return { ok: true, answer };
}

/** The distinct ids of `value`, or why it is refused. */
function idList(value: unknown, field: string, cap: number): string[] | string {
  if (!Array.isArray(value)) return `${field} is not an array`;
  const ids = new Set<string>();
  for (const id of value) {
    if (!isValidId(id)) return `${field} holds an id that breaks the id grammar`;
    ids.add(id);
  }
  if (ids.size > cap) return `${field} holds ${ids.size} ids, over the cap of ${cap}`;
  return ids.size === value.length ? (value as string[]) : [...ids];
}

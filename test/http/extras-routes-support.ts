/** What the extras route files (test/http/extras-routes-*.test.ts) share. */
import type { BadgeExplanation, ConversationListItem } from '@bubble/badges';
import { expect } from 'vitest';
import {
  client,
  expectError,
  parseJson,
  platform,
  platformBadge,
  type App,
  type Badge,
  type Reply,
} from './support.js';

/** What the HTTP routes answer: the service's own types, as JSON. */
export type ListItem = ConversationListItem;
export type Explanation = BadgeExplanation;

/** The fields of a conversation list item, sorted. */
export const LIST_FIELDS = ['id', 'lastTs', 'maxSeq', 'muted', 'preview', 'unread'];

/** A 400 of the contract for a bad value: either of the two codes the spec names for it. */
export function expectBadInput(reply: Reply, what: string): void {
  expect(reply.status, `${what}: ${reply.text}`).toBe(400);
  const code = (JSON.parse(reply.text) as { error: { code: string } }).error.code;
  expect(['UB_ERR_BAD_REQUEST', 'UB_ERR_BAD_ID'], what).toContain(code);
  expectError(reply, 400, code);
}

/** Each of `bodies`, then JSON cut short (`cutJson`), sent to `path` is refused as bad input. */
export async function expectBodiesRefused(
  app: App,
  method: string,
  path: string,
  what: string,
  bodies: readonly unknown[],
  cutJson: string,
): Promise<void> {
  for (const body of bodies) {
    expectBadInput(await platform(app, method, path, { body }), `${what} ${JSON.stringify(body)}`);
  }
  expectError(await platform(app, method, path, { rawBody: cutJson }), 400, 'UB_ERR_BAD_REQUEST');
}

/** A message of a conversation, as the platform sends it. */
export interface MessageIn {
  seq: number;
  from: string;
  ts?: number;
  preview?: Record<string, unknown>;
}

/** The calls the route tests share, on the app of the current test (`current()`). */
export function extrasCalls(current: () => App) {
  async function expectStatus(
    reply: Promise<Reply> | Reply,
    status: number,
    what: string,
  ): Promise<Reply> {
    const done = await reply;
    expect(done.status, `${what}: ${done.text}`).toBe(status);
    return done;
  }

  /** A 204 (or 202) carries no body. */
  async function expectEmpty(reply: Promise<Reply>, status: number, what: string) {
    const done = await expectStatus(reply, status, what);
    expect(done.text, what).toBe('');
  }

  const publish = (id: number, ts?: number, target = current()) =>
    expectEmpty(
      platform(target, 'POST', '/v1/notices', { body: ts === undefined ? { id } : { id, ts } }),
      202,
      `publish ${id}`,
    );
  const withdraw = (id: number, target = current()) =>
    expectEmpty(platform(target, 'DELETE', `/v1/notices/${id}`), 204, `withdraw ${id}`);
  const mark = (name: string, ts?: number) =>
    expectEmpty(
      platform(current(), 'PUT', `/v1/reddots/${name}`, ts === undefined ? {} : { body: { ts } }),
      204,
      `mark ${name}`,
    );
  const clear = (name: string) =>
    expectEmpty(platform(current(), 'DELETE', `/v1/reddots/${name}`), 204, `clear ${name}`);
  const setMembers = (conversation: string, members: string[], target = current()) =>
    expectEmpty(
      platform(target, 'PUT', `/v1/conversations/${conversation}/members`, {
        body: { members },
      }),
      204,
      `PUT members of ${conversation}`,
    );
  const addMembers = (conversation: string, members: string[]) =>
    expectEmpty(
      platform(current(), 'POST', `/v1/conversations/${conversation}/members`, {
        body: { members },
      }),
      204,
      `POST members of ${conversation}`,
    );
  const leave = (conversation: string, user: string) =>
    expectEmpty(
      platform(current(), 'DELETE', `/v1/conversations/${conversation}/members/${user}`),
      204,
      `${user} leaves ${conversation}`,
    );
  const dissolve = (conversation: string) =>
    expectEmpty(
      platform(current(), 'DELETE', `/v1/conversations/${conversation}`),
      204,
      `dissolve ${conversation}`,
    );

  /** One message or a batch; 202 {accepted: n}. */
  async function send(
    conversation: string,
    messages: MessageIn | MessageIn[],
    target = current(),
  ): Promise<void> {
    const body = Array.isArray(messages) ? { messages } : messages;
    const reply = await expectStatus(
      platform(target, 'POST', `/v1/conversations/${conversation}/messages`, { body }),
      202,
      `messages to ${conversation}`,
    );
    expect(parseJson(reply)).toEqual({
      accepted: Array.isArray(messages) ? messages.length : 1,
    });
  }

  async function myBadge(token: string, target = current()): Promise<Badge> {
    const reply = await expectStatus(client(target, token, 'GET', '/v1/badge'), 200, 'badge');
    return parseJson(reply) as Badge;
  }

  async function read(token: string, body: unknown, target = current()): Promise<Badge> {
    const reply = await expectStatus(
      client(target, token, 'POST', '/v1/badge/read', { body }),
      200,
      `read ${JSON.stringify(body)}`,
    );
    return parseJson(reply) as Badge;
  }

  async function list(token: string, query = '', target = current()): Promise<ListItem[]> {
    const reply = await expectStatus(
      client(target, token, 'GET', `/v1/conversations${query}`),
      200,
      `list${query}`,
    );
    const items = parseJson(reply) as ListItem[];
    expect(Array.isArray(items)).toBe(true);
    for (const item of items) expect(Object.keys(item).sort()).toEqual(LIST_FIELDS);
    return items;
  }

  const mute = (token: string, conversation: string, muted: boolean) =>
    expectEmpty(
      client(current(), token, 'PUT', `/v1/conversations/${conversation}/mute`, {
        body: { muted },
      }),
      204,
      `mute ${conversation} ${muted}`,
    );

  async function explain(user: string, target = current()): Promise<Explanation> {
    const reply = await expectStatus(
      platform(target, 'GET', `/v1/users/${user}/badge/explain`),
      200,
      `explain ${user}`,
    );
    return parseJson(reply) as Explanation;
  }

  /** Everything a refused call must leave as it was, for `users` (none of them is seen). */
  async function snapshot(users: string[], tokens: string[] = []) {
    const badges = await Promise.all(users.map((user) => platformBadge(current(), user)));
    const lists = await Promise.all(tokens.map((token) => list(token)));
    const explained = await Promise.all(
      users.map(async (user) => {
        const e = await explain(user);
        return { ...e, stored: null };
      }),
    );
    return { badges, lists, explained };
  }

  return {
    expectStatus,
    expectEmpty,
    publish,
    withdraw,
    mark,
    clear,
    setMembers,
    addMembers,
    leave,
    dissolve,
    send,
    myBadge,
    read,
    list,
    mute,
    explain,
    snapshot,
  };
}

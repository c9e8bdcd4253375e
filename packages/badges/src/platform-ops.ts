import {
  BubbleError,
  counterBatchSchema,
  counterEventSchema,
  cursorMigrationSchema,
  parseInput,
  idSchema,
  membersSchema,
  messageSchema,
  noticeSchema,
  positiveIdSchema,
  postBatchSchema,
  presenceSchema,
  replaceFollowsSchema,
  replaceTopicsSchema,
  reddotMarkSchema,
  DEFAULT_PRESENCE_TTL_MS,
  LIMITS,
  type MessageInput,
  type PostInput,
} from '@bubble/protocol';
import { z } from 'zod';
import type { BadgeService } from './badge-service.js';

/**
 * The platform's calls as ops of the ingest stream (docs/api.md, "Events through a Redis
 * Stream"): each op's body is the HTTP call's body with the path parameters as fields, and its
 * effect is the BadgeService method the HTTP route calls. Posts and messages are returned as
 * data, so a consumer can merge consecutive ones into one call as HTTP batches are.
 */

const pair = { user: idSchema, author: idSchema };
const topicPair = { user: idSchema, topic: idSchema };
const inConversation = { conversation: idSchema };

const messageBodySchema = z.union([
  z.strictObject({ ...inConversation, ...messageSchema.shape }),
  z.strictObject({
    ...inConversation,
    messages: z.array(messageSchema).min(1).max(LIMITS.maxMessagesPerBatch),
  }),
]);

/** The ops this version applies, in api.md's order. */
export const PLATFORM_OP_NAMES = [
  'follow',
  'unfollow',
  'replaceFollows',
  'followTopic',
  'unfollowTopic',
  'replaceTopics',
  'post',
  'deletePost',
  'presence',
  'notice',
  'withdrawNotice',
  'reddot',
  'clearReddot',
  'members',
  'addMembers',
  'removeMember',
  'dissolve',
  'message',
  'counter',
  'retractCounter',
  'cursors',
] as const;

export type PlatformOpName = (typeof PLATFORM_OP_NAMES)[number];

export type ParsedPlatformOp =
  | { kind: 'posts'; op: 'post'; posts: PostInput[] }
  | { kind: 'messages'; op: 'message'; conversation: string; messages: MessageInput[] }
  | { kind: 'call'; op: PlatformOpName; apply: (service: BadgeService) => Promise<unknown> };

interface OpSpec<Schema extends z.ZodType> {
  schema: Schema;
  /** The entity whose partition carries the op (FNV-1a of it mod P). */
  entity: (body: z.infer<Schema>) => string;
  parsed: (body: z.infer<Schema>) => ParsedPlatformOp;
}

function op<Schema extends z.ZodType>(spec: OpSpec<Schema>): OpSpec<z.ZodType> {
  return spec as unknown as OpSpec<z.ZodType>;
}

function call(
  name: PlatformOpName,
  apply: (service: BadgeService) => Promise<unknown>,
): ParsedPlatformOp {
  return { kind: 'call', op: name, apply };
}

export const PLATFORM_OPS: Readonly<Record<PlatformOpName, OpSpec<z.ZodType>>> = {
  follow: op({
    schema: z.strictObject(pair),
    entity: (b) => b.user,
    parsed: (b) => call('follow', (s) => s.follow(b.user, b.author)),
  }),
  unfollow: op({
    schema: z.strictObject(pair),
    entity: (b) => b.user,
    parsed: (b) => call('unfollow', (s) => s.unfollow(b.user, b.author)),
  }),
  replaceFollows: op({
    schema: z.strictObject({ user: idSchema, ...replaceFollowsSchema.shape }),
    entity: (b) => b.user,
    parsed: (b) => call('replaceFollows', (s) => s.replaceFollows(b.user, b.authors)),
  }),
  followTopic: op({
    schema: z.strictObject(topicPair),
    entity: (b) => b.user,
    parsed: (b) => call('followTopic', (s) => s.followTopic(b.user, b.topic)),
  }),
  unfollowTopic: op({
    schema: z.strictObject(topicPair),
    entity: (b) => b.user,
    parsed: (b) => call('unfollowTopic', (s) => s.unfollowTopic(b.user, b.topic)),
  }),
  replaceTopics: op({
    schema: z.strictObject({ user: idSchema, ...replaceTopicsSchema.shape }),
    entity: (b) => b.user,
    parsed: (b) => call('replaceTopics', (s) => s.replaceTopics(b.user, b.topics)),
  }),
  post: op({
    schema: postBatchSchema,
    entity: (b) => ('posts' in b ? b.posts[0]!.author : b.author),
    parsed: (b) => ({ kind: 'posts', op: 'post', posts: 'posts' in b ? b.posts : [b] }),
  }),
  deletePost: op({
    schema: z.strictObject({ author: idSchema, id: idSchema }),
    entity: (b) => b.author,
    parsed: (b) => call('deletePost', (s) => s.deletePost(b.author, b.id)),
  }),
  presence: op({
    schema: presenceSchema,
    entity: (b) => b.user,
    parsed: (b) =>
      call('presence', (s) => s.setPresence(b.user, b.online, b.ttlMs ?? DEFAULT_PRESENCE_TTL_MS)),
  }),
  notice: op({
    schema: noticeSchema,
    entity: (b) => String(b.id),
    parsed: (b) => call('notice', (s) => s.publishNotice(b.id, b.ts)),
  }),
  withdrawNotice: op({
    schema: z.strictObject({ id: positiveIdSchema }),
    entity: (b) => String(b.id),
    parsed: (b) => call('withdrawNotice', (s) => s.withdrawNotice(b.id)),
  }),
  reddot: op({
    schema: z.strictObject({ name: idSchema, ...reddotMarkSchema.shape }),
    entity: (b) => b.name,
    parsed: (b) => call('reddot', (s) => s.markReddot(b.name, b.ts)),
  }),
  clearReddot: op({
    schema: z.strictObject({ name: idSchema }),
    entity: (b) => b.name,
    parsed: (b) => call('clearReddot', (s) => s.clearReddot(b.name)),
  }),
  members: op({
    schema: z.strictObject({ ...inConversation, ...membersSchema.shape }),
    entity: (b) => b.conversation,
    parsed: (b) => call('members', (s) => s.replaceMembers(b.conversation, b.members)),
  }),
  addMembers: op({
    schema: z.strictObject({ ...inConversation, ...membersSchema.shape }),
    entity: (b) => b.conversation,
    parsed: (b) => call('addMembers', (s) => s.addMembers(b.conversation, b.members)),
  }),
  removeMember: op({
    schema: z.strictObject({ ...inConversation, user: idSchema }),
    entity: (b) => b.conversation,
    parsed: (b) => call('removeMember', (s) => s.removeMember(b.conversation, b.user)),
  }),
  dissolve: op({
    schema: z.strictObject(inConversation),
    entity: (b) => b.conversation,
    parsed: (b) => call('dissolve', (s) => s.dissolve(b.conversation)),
  }),
  message: op({
    schema: messageBodySchema,
    entity: (b) => b.conversation,
    parsed: (b) => {
      const { conversation, ...rest } = b;
      const messages = 'messages' in rest ? rest.messages : [rest as MessageInput];
      return { kind: 'messages', op: 'message', conversation, messages };
    },
  }),
  counter: op({
    schema: counterBatchSchema,
    entity: (b) => ('events' in b ? b.events[0]!.user : b.user),
    parsed: (b) => call('counter', (s) => s.ingestCounterEvents('events' in b ? b.events : [b])),
  }),
  retractCounter: op({
    schema: counterEventSchema,
    entity: (b) => b.user,
    parsed: (b) => call('retractCounter', (s) => s.retractCounterEvent(b.user, b.kind, b.id)),
  }),
  cursors: op({
    schema: cursorMigrationSchema,
    entity: (b) => b.users[0]!.user,
    parsed: (b) => call('cursors', (s) => s.migrateCursors(b)),
  }),
};

/** The versions of an ingest entry's schema this bubble reads (field `v`). */
export const PLATFORM_OP_VERSIONS: readonly string[] = ['1'];

export function isPlatformOp(name: string): name is PlatformOpName {
  return Object.hasOwn(PLATFORM_OPS, name);
}

/**
 * Validates one op's body (already parsed from JSON) as readBody does an HTTP body: a string
 * breaking the id grammar is UB_ERR_BAD_ID, anything else UB_ERR_BAD_REQUEST.
 */
export function parsePlatformOp(name: string, body: unknown): ParsedPlatformOp {
  return PLATFORM_OPS[knownOp(name)].parsed(validBody(knownOp(name), body));
}

/** The entity whose partition an op belongs to (platforms hash it with FNV-1a mod P). */
export function platformOpEntity(name: string, body: unknown): string {
  return PLATFORM_OPS[knownOp(name)].entity(validBody(knownOp(name), body));
}

function knownOp(name: string): PlatformOpName {
  if (isPlatformOp(name)) return name;
  throw new BubbleError(
    'UB_ERR_BAD_REQUEST',
    `unknown op ${JSON.stringify(String(name).slice(0, 64))}`,
  );
}

function validBody(name: PlatformOpName, body: unknown): unknown {
  return parseInput(PLATFORM_OPS[name].schema, body, `op ${name}: `);
}

import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, type Redis } from 'ioredis';
import { flattenLua, includesIn } from './lua-includes.js';
import type { ScriptStatus } from './script-status.js';

/** The Lua scripts live in packages/store/lua, the same distance from src/ and dist/. */
const LUA_DIR = fileURLToPath(new URL('../../lua/', import.meta.url));
const SCRIPT_FILE = /^([a-z][A-Za-z]*)-(\d+|n)\.lua$/;

export interface ScriptSource {
  name: string;
  /** The script's file in the Lua directory, `verbNoun-N.lua`. */
  file: string;
  /** Undefined for a `verbNoun-n.lua` script: its caller passes the key count first. */
  numberOfKeys: number | undefined;
  /** The text Redis runs: the file with its includes flattened (lua-includes.ts). */
  lua: string;
}

/**
 * Reads every `verbNoun-N.lua` file once, its includes flattened; N is the number of KEYS the
 * script takes, or `n` when it varies per call (ioredis then takes numkeys as the first
 * argument, as EVALSHA does). The build writes the same texts (packages/store/scripts/build-lua.ts).
 */
export function loadScripts(dir = LUA_DIR): ScriptSource[] {
  const readInclude = includesIn(dir);
  return readdirSync(dir)
    .filter((file) => SCRIPT_FILE.test(file))
    .sort()
    .map((file) => {
      const [, name, keys] = SCRIPT_FILE.exec(file)!;
      return {
        name: name!,
        file,
        numberOfKeys: keys === 'n' ? undefined : Number(keys),
        lua: flattenLua(readFileSync(join(dir, file), 'utf8'), file, readInclude),
      };
    });
}

type Arg = string | number;
type Refused = typeof ScriptStatus.Refused;

/** A script's call as its caller makes it: the KEYS, the ARGV, and what Redis replies. */
interface ScriptSpec<Keys extends readonly string[], Args extends readonly Arg[], Reply> {
  /** As in the file name: the length of Keys, or `n` when Keys is a list of any length. */
  readonly keys: number | 'n';
  /** Never set: carries the call's types. */
  readonly call?: (keys: Readonly<Keys>, args: Readonly<Args>) => Promise<Reply>;
}

/** The key count the file name must show for a Keys tuple: its length, or `n` for a list. */
type KeyCount<Keys extends readonly string[]> = number extends Keys['length']
  ? 'n'
  : Keys['length'];

function script<Keys extends readonly string[], Args extends readonly Arg[], Reply>(
  keys: KeyCount<Keys>,
): ScriptSpec<Keys, Args, Reply> {
  return { keys };
}

type LogEntry = [id: string, fields: string[]];

/**
 * A follow script's keys (the list it changes, the user's authors list, their fetch marker),
 * which list ('a' authors, 't' topics), and '1' with a sources endpoint (recordedFollows.lua).
 */
type FollowKeys = [list: string, authors: string, fetch: string];
type FollowKind = 'a' | 't';
type OnDemand = '1' | '0';

type UserInputsReply = [
  follows: string | null,
  topics: string | null,
  readAt: string | null,
  marks: string[],
  conversations: string[],
  counters: [watermark: number, ...counts: number[]],
];

/**
 * Every script of packages/store/lua, typed once: the KEYS and ARGV its caller passes and the
 * reply ioredis hands back (Lua integers as numbers, strings, tables as arrays, false as null).
 * Each file's header says what the values mean.
 */
export const SCRIPTS = {
  addTopicPosts: script<[window: string], [minTs: number, ...tsMemberPairs: Arg[]], number>(1),
  announceNode: script<
    [nodesAlive: string, nodesInfo: string],
    [node: string, ttlMs: number, info: string],
    number
  >(2),
  advanceCursor: script<[cursors: string], [field: string, target: number], string>(1),
  advanceCursors: script<string[], [field: string, ...targets: number[]], string[]>('n'),
  advanceManyMemberSeqs: script<string[], Arg[], Array<string | null>>('n'),
  advanceMemberSeqs: script<
    [meta: string, members: string],
    [...memberSeqPairs: Arg[]],
    Array<string | null>
  >(2),
  appendEvents: script<[log: string], [maxLen: number, ...entries: Arg[]], string>(1),
  checkOnline: script<[online: string], [user: string], number>(1),
  checkOnlineAmong: script<string[], string[], number[]>('n'),
  // Offline delivery's scripts: webhook-queue/webhook-scripts.ts.
  replayDeadLetter: script<
    [dead: string, stream: string],
    [id: string],
    string | typeof ScriptStatus.Unchanged | null
  >(2),
  beginFetch: script<[authors: string, fetch: string], [ttlMs: number], number>(2),
  countOnline: script<[online: string], [], number>(1),
  convertLegacyFollows: script<[string, string, string, string], [], number>(4),
  countCounters: script<
    [state: string, first: string, second: string, third: string],
    [windowMs: number, ...kinds: string[]],
    [watermark: number, ...counts: number[]]
  >(4),
  countPosts: script<string[], [low: string, high: number], number>('n'),
  clearReddot: script<
    [marked: string, log: string],
    [name: string, maxLen: number, event: string],
    number
  >(2),
  deadLetterIngest: script<
    [stream: string, dead: string],
    [group: string, entry: string, error: string, deliveries: number, ...fields: string[]],
    string | null
  >(2),
  deletePost: script<
    [posts: string, deleted: string, unlogged: string, topics: string],
    [id: string, now: number, minTs: number],
    [ts: string | null, topics: string | null]
  >(4),
  deletePostAndLog: script<
    [posts: string, deleted: string, topics: string, log: string],
    [author: string, id: string, now: number, minTs: number, maxLen: number],
    [ts: string | null, topics: string | null]
  >(4),
  dissolveConversation: script<
    [meta: string, members: string, unlogged: string],
    [],
    [members: string[], owed: string[]]
  >(3),
  ageBadgeState: script<
    [offline: string, online: string],
    [user: string, computedAt: number],
    number
  >(2),
  ageBadgeStates: script<
    [offline: string, online: string],
    [computedAt: number, ...users: string[]],
    number
  >(2),
  dropInactiveUser: script<string[], [cutoff: number], number>('n'),
  expireBadgeStates: script<
    [offline: string, online: string, badges: string],
    [cutoff: number, limit: number],
    number
  >(3),
  expirePresence: script<
    [online: string, events: string, offline: string],
    [limit: number, maxLen: number],
    string[]
  >(3),
  followAuthor: script<FollowKeys, [string, number, FollowKind, OnDemand, number], number>(3),
  installSources: script<
    [authors: string, topics: string, fetch: string, cursors: string, marks: string],
    [
      followCap: number,
      topicCap: number,
      feedCursorField: string,
      readAt: number | '',
      noticesSeen: number | '',
      followsJoined: string,
      topicsJoined: string,
    ],
    [authors: string | null, topics: string | null, readAt: string | null]
  >(5),
  indexActivity: script<
    [activity: string, seqs: string],
    [size: number, ...idSeqTs: Arg[]],
    number
  >(2),
  ingestMessages: script<
    [meta: string, members: string],
    [largeGroup: number, ...messages: string[]],
    Refused | [maxSeq: string, lastTs: string, members: string[] | 0, ...senders: string[]]
  >(2),
  ingestPostBatch: script<
    string[],
    [minTs: number, maxLen: number, windows: number, ...topicsThenPostsByAuthor: Arg[]],
    number[]
  >('n'),
  ingestPosts: script<
    [posts: string, deleted: string, unlogged: string, topics: string],
    [minTs: number, ...idTsTopicsTriples: Arg[]],
    number[]
  >(4),
  ingestCounters: script<
    [state: string, retracted: string, events: string],
    [windowMs: number, kind: string, ...ids: string[]],
    [accepted: number, ignored: number]
  >(3),
  joinConversation: script<
    [meta: string, members: string, unlogged: string],
    [mode: 'add' | 'replace', ...users: string[]],
    [
      added: string[],
      removed: string[],
      owed: string[],
      countBefore: number,
      countAfter: number,
      maxSeq: string,
      lastTs: string,
    ]
  >(3),
  listNodes: script<[nodesAlive: string, nodesInfo: string], [], (string | null)[]>(2),
  listOnline: script<[online: string], [], string[]>(1),
  markReddot: script<
    [marked: string, log: string],
    [name: string, ts: number, maxLen: number, event: string],
    number
  >(2),
  muteMember: script<[members: string], [user: string, muted: '1' | '0'], number>(1),
  nextFence: script<[fence: string, touched: string], [], string>(2),
  publishNotice: script<
    [live: string, highest: string, log: string],
    [id: string, maxLen: number, event: string],
    number
  >(3),
  readCounters: script<[state: string], [upTo: string, ...kinds: string[]], number>(1),
  readConversation: script<
    [meta: string, members: string],
    [user: string, seq: string],
    string | null
  >(2),
  readEvents: script<
    [log: string],
    [after: string, limit: number],
    [gap: number, entries: LogEntry[]]
  >(1),
  removeMember: script<
    [members: string, unlogged: string],
    [user: string],
    [removed: number, owed: number, countAfter: number]
  >(2),
  rebuildActivity: script<
    [activity: string, seqs: string],
    [size: number, ...idSeqTs: Arg[]],
    number
  >(2),
  retractCounter: script<
    [state: string, retracted: string, events: string],
    [windowMs: number, kind: string, id: string],
    number
  >(3),
  renewLeader: script<[leader: string], [node: string, ttlMs: number], number>(1),
  replaceFollows: script<FollowKeys, [FollowKind, OnDemand, ...ids: string[]], number>(3),
  resignLeader: script<[leader: string], [node: string], number>(1),
  readIngestBacklog: script<
    [stream: string, dead: string],
    [group: string, countLimit: number],
    [
      groupExists: number,
      lag: number,
      pending: number,
      oldestPending: string,
      now: number,
      dead: number,
    ]
  >(2),
  readClock: script<[anyKeyOfTheSlot: string], [], number>(1),
  readManyMemberSeqs: script<string[], Arg[], Array<string | null>>('n'),
  readManyUserInputs: script<
    string[],
    [feedCursorField: string, windowMs: number, ...kinds: string[]],
    UserInputsReply[]
  >('n'),
  readMemberSeqs: script<
    [meta: string, members: string],
    string[],
    [maxSeq: string | null, ...entries: Array<string | null>]
  >(2),
  readUserInputs: script<
    [
      follows: string,
      topics: string,
      cursors: string,
      marks: string,
      conversations: string,
      counterState: string,
      first: string,
      second: string,
      third: string,
    ],
    [feedCursorField: string, windowMs: number, ...kinds: string[]],
    UserInputsReply
  >(9),
  routeUsers: script<
    [routes: string],
    [gateway: string, ttlMs: number, ...users: string[]],
    number[]
  >(1),
  /** Called through RedisFencedBadges' own encoded EVALSHA (scriptSource), not scripts(). */
  saveBadges: script<
    [
      fence: string,
      stale: string,
      routes: string,
      badges: string,
      touched: string,
      online: string,
      events: string,
      sent: string,
    ],
    Arg[],
    Refused | string
  >(8),
  signalLists: script<
    [routes: string],
    [channelPrefix: string, publish: string, ...users: string[]],
    number
  >(1),
  seeUser: script<
    [marks: string],
    [now: number, highest: string, throttleMs: number],
    [seen: number, touched: number, owed: number]
  >(1),
  setOffline: script<
    [online: string, events: string, offline: string],
    [user: string, maxLen: number],
    number
  >(3),
  setOnline: script<
    [online: string, events: string, offline: string],
    [maxLen: number, ...userTtlPairs: Arg[]],
    number[]
  >(3),
  settleSights: script<[lastSeen: string], [cutoff: number, ...userOutcomePairs: Arg[]], number>(1),
  readIngest: script<[stream: string], [group: string, consumer: string, count: number], string>(1),
  trimIngest: script<[stream: string], [group: string], number>(1),
  unfollowAuthor: script<FollowKeys, [string, FollowKind, OnDemand, number], number>(3),
  withdrawNotice: script<
    [live: string, log: string],
    [id: string, maxLen: number, event: string],
    number
  >(2),
};

export type ScriptName = keyof typeof SCRIPTS;

/** One typed function per script: `await run.countOnline([onlineKey], [])`. */
export type ScriptRunner = {
  readonly [Name in ScriptName]: NonNullable<(typeof SCRIPTS)[Name]['call']>;
};

let cached: ScriptSource[] | undefined;

/** The scripts of LUA_DIR, checked once against SCRIPTS: one entry per file, same key count. */
function bubbleScripts(): ScriptSource[] {
  if (cached) return cached;
  const loaded = loadScripts();
  const specs: Record<string, { keys: number | 'n' }> = SCRIPTS;
  const files = new Set(loaded.map(({ name }) => name));
  for (const { name, file, numberOfKeys } of loaded) {
    const spec = specs[name];
    if (!spec) throw new Error(`${file} has no entry in SCRIPTS (scripts.ts)`);
    if (spec.keys !== (numberOfKeys ?? 'n')) {
      throw new Error(`${file} takes ${numberOfKeys ?? 'n'} keys, SCRIPTS says ${spec.keys}`);
    }
  }
  for (const name of Object.keys(SCRIPTS)) {
    if (!files.has(name)) throw new Error(`SCRIPTS names ${name}, which has no file in ${LUA_DIR}`);
  }
  return (cached = loaded);
}

type DefinedCommand = (...args: Arg[]) => Promise<unknown>;
const runners = new WeakMap<Redis | Cluster, ScriptRunner>();

/**
 * The scripts as typed functions on `client`. The first call for a client registers every script
 * on it through defineCommand (EVALSHA with EVAL fallback); every store component built on a
 * shared client then gets the same runner. A `-n` script's function passes the key count itself.
 */
export function scripts(client: Redis | Cluster): ScriptRunner {
  let runner = runners.get(client);
  if (runner) return runner;
  for (const script of bubbleScripts()) {
    client.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  }
  if (client instanceof Cluster) {
    // ioredis groups a Cluster's auto-pipelined commands by their first argument, which for a
    // `-n` script is its key count: calls of one count on different slots went out as one
    // pipeline and failed ("All keys in the pipeline should belong to the same slots allocation
    // group"). These calls go out one by one instead, each to its keys' node.
    const ignored = (client.options.autoPipeliningIgnoredCommands ??= []);
    for (const { name, numberOfKeys } of bubbleScripts()) {
      if (numberOfKeys === undefined && !ignored.includes(name)) ignored.push(name);
    }
  }
  // defineCommand puts each script on the client as a method of its name; the table types it.
  const commands = client as unknown as Record<ScriptName, DefinedCommand>;
  const entries = (Object.keys(SCRIPTS) as ScriptName[]).map((name) => {
    const command = commands[name].bind(client);
    const run =
      SCRIPTS[name].keys === 'n'
        ? (keys: readonly string[], args: readonly Arg[]) => command(keys.length, ...keys, ...args)
        : (keys: readonly string[], args: readonly Arg[]) => command(...keys, ...args);
    return [name, run];
  });
  runner = Object.fromEntries(entries) as ScriptRunner;
  runners.set(client, runner);
  return runner;
}

/** One script's source and the sha1 EVALSHA names it by, for callers that encode their calls. */
export function scriptSource(name: ScriptName): ScriptSource & { sha: string } {
  const script = bubbleScripts().find((candidate) => candidate.name === name);
  if (!script) throw new Error(`no script ${name} in ${LUA_DIR}`);
  return { ...script, sha: createHash('sha1').update(script.lua).digest('hex') };
}

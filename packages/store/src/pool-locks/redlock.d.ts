/**
 * Types of redlock 5.0.0-beta.2 (pinned exactly). The package ships dist/index.d.ts but its
 * `exports` map has no "types" condition, so NodeNext resolution cannot see it; and that file
 * imports ioredis 4 types we do not have. This ambient declaration mirrors its public API, with
 * a structural client type that ioredis 6 clients satisfy (redlock only calls eval/evalsha/quit).
 *
 * Why a `.d.ts` and why it works with `tsc -b`:
 * - It is a global script (no top-level import/export), so `declare module 'redlock'` declares
 *   the module instead of augmenting one. (A `.ts` file would not do: in a "type": "module"
 *   package NodeNext treats every `.ts` file as a module, turning the block into an augmentation
 *   of an untyped module, which is an error.)
 * - The store's tsconfig includes all of src, so the store project sees it. It is not emitted to
 *   dist, which is fine because no exported declaration of the store mentions redlock's types:
 *   redlock stays behind PoolLocks/HeldLock, and consumers compile against dist/*.d.ts that never
 *   import 'redlock'.
 * - Files that import 'redlock' also carry `/// <reference path="../redlock.d.ts" />`, so any
 *   other program compiling the store's sources (test/tsconfig.json, editors) finds it too.
 *   TypeScript ≥ 5.5 does not copy such references into emitted declarations.
 * Check against node_modules/redlock/dist/index.d.ts when changing the pinned version.
 */
declare module 'redlock' {
  import type { EventEmitter } from 'node:events';

  /**
   * What redlock calls on a client; ioredis `Redis` and `Cluster` instances fit. Redlock passes
   * the keys and arguments as one array, which ioredis flattens; declared as a rest parameter
   * because that is the ioredis overload a structural check can match.
   */
  export interface RedlockClient {
    evalsha(
      hash: string,
      numberOfKeys: number,
      ...keysAndArgs: (string | number)[]
    ): Promise<unknown>;
    eval(
      script: string,
      numberOfKeys: number,
      ...keysAndArgs: (string | number)[]
    ): Promise<unknown>;
    quit(): Promise<unknown>;
  }

  export interface ExecutionStats {
    readonly membershipSize: number;
    readonly quorumSize: number;
    readonly votesFor: Set<RedlockClient>;
    readonly votesAgainst: Map<RedlockClient, Error>;
  }

  export interface ExecutionResult {
    /** One entry per attempt; each settles once every client has voted. */
    attempts: ReadonlyArray<Promise<ExecutionStats>>;
  }

  export interface Settings {
    readonly driftFactor: number;
    /** Retries after the first attempt; -1 retries forever. */
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  /** Thrown per client (and seen as a vote against) when a resource is held by another value. */
  export class ResourceLockedError extends Error {
    constructor(message: string);
  }

  /** Thrown when an operation could not win a quorum in its retry window. */
  export class ExecutionError extends Error {
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
    constructor(message: string, attempts: ReadonlyArray<Promise<ExecutionStats>>);
  }

  export class Lock {
    readonly redlock: Redlock;
    readonly resources: string[];
    /** Random value identifying this holder; kept across extensions. */
    readonly value: string;
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
    /**
     * Wall-clock ms: time the request was sent + duration − drift (driftFactor × duration + 2).
     * Set to 0 when the lock is released or replaced by the Lock an extension returns.
     */
    expiration: number;
    release(): Promise<ExecutionResult>;
    /** Resolves to a new Lock; the old one's expiration becomes 0. */
    extend(duration: number): Promise<Lock>;
  }

  export type RedlockAbortSignal = AbortSignal & { error?: Error };

  export default class Redlock extends EventEmitter {
    readonly clients: Set<RedlockClient>;
    readonly settings: Settings;
    constructor(
      clients: Iterable<RedlockClient>,
      settings?: Partial<Settings>,
      scripts?: {
        readonly acquireScript?: string | ((script: string) => string);
        readonly extendScript?: string | ((script: string) => string);
        readonly releaseScript?: string | ((script: string) => string);
      },
    );
    quit(): Promise<void>;
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    release(lock: Lock, settings?: Partial<Settings>): Promise<ExecutionResult>;
    extend(existing: Lock, duration: number, settings?: Partial<Settings>): Promise<Lock>;
    using<T>(
      resources: string[],
      duration: number,
      settings: Partial<Settings>,
      routine?: (signal: RedlockAbortSignal) => Promise<T>,
    ): Promise<T>;
    using<T>(
      resources: string[],
      duration: number,
      routine: (signal: RedlockAbortSignal) => Promise<T>,
    ): Promise<T>;
  }
}

import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';
import type { LoggedWriterOptions, RedisChangeLog } from './redis-change-log.js';

/** A Redis writer that logs its own changes: what it writes with and the log it writes to. */
export abstract class RedisLoggedWriter {
  protected readonly redis: RedisClient;
  protected readonly run: ScriptRunner;
  protected readonly keys: RedisKeys;
  protected readonly log: RedisChangeLog;

  constructor(shared: LoggedWriterOptions) {
    this.redis = shared.client;
    this.run = scripts(shared.client);
    this.keys = shared.keys;
    this.log = shared.log;
  }
}

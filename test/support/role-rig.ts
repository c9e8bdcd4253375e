/**
 * What a test file that runs the built CLI's roles starts first: the workspace built, one
 * redis-server, and a working directory for the roles; stop() takes both away again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startRedisServer, type RedisServerHandle } from '@bubble/test-utils';
import { buildOnce } from './build.js';

export interface RoleRig {
  readonly redis: RedisServerHandle;
  /** A fresh temporary directory, named after the file's label, for the roles to run in. */
  readonly cwd: string;
  stop(): Promise<void>;
}

export async function startRoleRig(label: string): Promise<RoleRig> {
  await buildOnce();
  const redis = await startRedisServer();
  const cwd = mkdtempSync(path.join(tmpdir(), `bubble-${label}-`));
  return {
    redis,
    cwd,
    async stop() {
      await redis.stop();
      rmSync(cwd, { recursive: true, force: true });
    },
  };
}

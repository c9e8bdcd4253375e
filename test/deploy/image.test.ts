/**
 * The image's contents, run as processes (no Docker engine here): the Dockerfile's runtime
 * stage rebuilt in a temp dir by following its own lines (WORKDIR, COPY from the context and
 * from the build stage, the production-only `npm ci`), then every role started from there with
 * the stage's ENTRYPOINT and ENV against a real redis-server, checked with the stage's
 * HEALTHCHECK command, /healthz and /readyz, and stopped with SIGTERM through tini.
 */
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  cleanEnv,
  findExecutable,
  freePort,
  RoleProcess,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, ROOT } from '../support/build.js';
import { skippedWithout } from '../support/missing-tools.js';
import {
  execForm,
  healthcheckCommand,
  lastArgs,
  readCopy,
  readDockerfile,
  stageEnv,
  stageNamed,
  type Stage,
} from './dockerfile.js';

const SECRETS = {
  BUBBLE_API_KEY: 'image-test-api-key-7c2e90b4d1f35a68',
  BUBBLE_JWT_SECRET: 'image-test-jwt-secret-3a9f61d08e4c72b5',
};
const ROLES = ['server', 'core', 'gateway', 'all'] as const;
const NPM_CI = ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'];

const TINI = findExecutable('tini');
// Without tini the roles run without it: the group is reduced, so it is reported as skipped.
skippedWithout('tini', TINI, 'the roles under tini, as in the image (they ran without it)');

/**
 * The runtime stage in `dir`, line by line. Returns what RUN lines were not run (apt-get: the
 * tini they install is used from this machine when present).
 */
function reproduceRuntime(stages: Stage[], runtime: Stage, dir: string): string[] {
  const skipped: string[] = [];
  let workdir = '/';
  const inImage = (target: string) => path.join(dir, path.posix.resolve(workdir, target));
  for (const { keyword, args } of runtime.instructions) {
    if (keyword === 'WORKDIR') {
      workdir = path.posix.resolve(workdir, args);
    } else if (keyword === 'COPY') {
      const copy = readCopy(args);
      const from = copy.from === undefined ? undefined : stageNamed(stages, copy.from);
      const fromWorkdir = from ? (lastArgs(from, 'WORKDIR') ?? '/') : undefined;
      for (const source of copy.sources) {
        // The build stage's WORKDIR holds the repository after `npm run build`: our tree.
        let local: string;
        if (fromWorkdir !== undefined) {
          const relative = path.posix.relative(fromWorkdir, source);
          if (relative.startsWith('..'))
            throw new Error(`COPY --from=${copy.from} ${source} is outside ${fromWorkdir}`);
          local = path.join(ROOT, relative);
        } else {
          local = path.join(ROOT, source);
        }
        if (!existsSync(local)) throw new Error(`COPY ${args}: ${local} does not exist`);
        // A directory's contents go into the destination; a file into it when it ends with /.
        const isDir = statSync(local).isDirectory();
        const target =
          copy.dest.endsWith('/') && !isDir
            ? path.join(inImage(copy.dest), path.basename(local))
            : inImage(copy.dest);
        cpSync(local, target, { recursive: true });
      }
    } else if (keyword === 'RUN') {
      if (!/\bnpm ci\b/.test(args)) {
        skipped.push(args);
        continue;
      }
      expect(args, 'the runtime stage installs production dependencies only').toContain(
        '--omit=dev',
      );
      const result = spawnSync('npm', NPM_CI, {
        cwd: inImage('.'),
        env: cleanEnv(stageEnv(runtime)),
        encoding: 'utf8',
        timeout: 120_000,
      });
      if (result.status !== 0)
        throw new Error(`npm ${NPM_CI.join(' ')} failed:\n${result.stdout}\n${result.stderr}`);
    }
  }
  return skipped;
}

interface RoleChild {
  proc: RoleProcess;
  /** Its whole environment, which the HEALTHCHECK command gets too. */
  env: Record<string, string>;
}

describe('the image (Dockerfile runtime stage), run as processes', () => {
  const stages = readDockerfile(ROOT);
  const runtime = stages.at(-1)!;
  let dir: string;
  let appDir: string;
  let skippedRuns: string[] = [];
  let redis: RedisServerHandle | undefined;
  const children: RoleChild[] = [];

  beforeAll(async () => {
    await buildOnce();
    dir = mkdtempSync(path.join(tmpdir(), 'bubble-image-'));
    skippedRuns = reproduceRuntime(stages, runtime, dir);
    appDir = path.join(dir, lastArgs(runtime, 'WORKDIR') ?? '/');
    redis = await startRedisServer();
  }, 180_000);

  afterAll(async () => {
    await Promise.all(children.map((c) => c.proc.kill().catch(() => undefined)));
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('is two stages on node:20-slim; the runtime runs as a non-root user under tini', () => {
    expect(stages.map((s) => s.from)).toEqual(['node:20-slim', 'node:20-slim']);
    const buildRuns = stageNamed(stages, 'build')
      .instructions.filter((i) => i.keyword === 'RUN')
      .map((i) => i.args);
    expect(buildRuns).toContain('npm ci --no-audit --no-fund');
    expect(buildRuns).toContain('npm run build');
    const user = lastArgs(runtime, 'USER');
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(skippedRuns.join('\n')).toContain('tini');
    const entrypoint = execForm(lastArgs(runtime, 'ENTRYPOINT')!, 'ENTRYPOINT');
    expect(entrypoint).toEqual(['tini', '--', 'node', 'packages/cli/bin/bubble.js']);
    expect(execForm(lastArgs(runtime, 'CMD')!, 'CMD')).toEqual(['all']);
    expect(healthcheckCommand(runtime)).toContain('/healthz');
    expect(stageEnv(runtime).NODE_ENV).toBe('production');
    const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const pattern of ['**/node_modules', '**/dist', '.git', '.env', '.env.*'])
      expect(ignored, `.dockerignore leaves out ${pattern}`).toContain(pattern);
  });

  it('holds production dependencies only, and no built bench or test utilities', () => {
    const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    // A name both the tests and a package need (ws) is a production dependency.
    const needed = new Set(
      readdirSync(path.join(ROOT, 'packages')).flatMap((pkg) => {
        const manifest = JSON.parse(
          readFileSync(path.join(ROOT, 'packages', pkg, 'package.json'), 'utf8'),
        ) as { dependencies?: Record<string, string> };
        return Object.keys(manifest.dependencies ?? {});
      }),
    );
    const devOnly = Object.keys(root.devDependencies).filter((name) => !needed.has(name));
    expect(devOnly).toContain('typescript');
    const present = devOnly.filter((name) => existsSync(path.join(appDir, 'node_modules', name)));
    expect(present, 'development dependencies in the image').toEqual([]);
    for (const pkg of ['bench', 'test-utils'])
      expect(existsSync(path.join(appDir, 'packages', pkg, 'dist'))).toBe(false);
    const cli = JSON.parse(readFileSync(path.join(ROOT, 'packages/cli/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(cli.dependencies)).not.toContain('@bubble/bench');
    expect(Object.keys(cli.dependencies)).not.toContain('@bubble/test-utils');
  });

  it('`bubble bench` says plainly that it is not installed in the image', () => {
    const result = spawnSync(process.execPath, ['packages/cli/bin/bubble.js', 'bench', 'compute'], {
      cwd: appDir,
      env: cleanEnv(stageEnv(runtime)),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('bubble bench is not installed in this image');
  });

  it('starts every role, which passes the HEALTHCHECK, answers /healthz and /readyz, and stops on SIGTERM', async () => {
    const prefix = uniquePrefix('image');
    const entrypoint = execForm(lastArgs(runtime, 'ENTRYPOINT')!, 'ENTRYPOINT');
    // Without tini on this machine the node command after `--` runs alone.
    const local = TINI
      ? [TINI, ...entrypoint.slice(1)]
      : entrypoint.slice(entrypoint.indexOf('--') + 1);
    const command = local.map((part) => (part === 'node' ? process.execPath : part));
    for (const role of ROLES) {
      const port = await freePort();
      const env = {
        ...stageEnv(runtime),
        REDIS_URL: redis!.url,
        BUBBLE_KEY_PREFIX: prefix,
        ...SECRETS,
      };
      children.push({
        proc: new RoleProcess({ role, port, env, command, cwd: appDir }),
        env: cleanEnv({ ...env, PORT: String(port) }),
      });
    }
    const healthcheck = healthcheckCommand(runtime).map((part) =>
      part === 'node' ? process.execPath : part,
    );
    for (const c of children) {
      await waitFor(
        () =>
          spawnSync(healthcheck[0]!, healthcheck.slice(1), {
            cwd: appDir,
            env: c.env,
            stdio: 'ignore',
            timeout: 5_000,
          }).status === 0,
        {
          timeoutMs: 40_000,
          intervalMs: 250,
          message: `${c.proc.role}: HEALTHCHECK\n${c.proc.describe()}`,
        },
      );
      for (const route of ['/healthz', '/readyz']) {
        const res = await fetch(c.proc.url + route);
        expect(res.status, `${c.proc.role} ${route}`).toBe(200);
      }
    }
    for (const c of children) c.proc.signal('SIGTERM');
    for (const c of children) {
      const exit = await c.proc.waitExit(15_000);
      expect(exit, `${c.proc.role} exits cleanly on SIGTERM\n${c.proc.describe()}`).toEqual({
        code: 0,
        signal: null,
      });
    }
  }, 120_000);
});

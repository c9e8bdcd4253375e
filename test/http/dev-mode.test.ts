/**
 * Development mode stays local (shared spec api.md, "Configuration"; docs/api.md): the generated
 * secrets and POST /demo/token only for `bubble all` on the embedded engine on loopback, unless
 * BUBBLE_DEV=1; on Redis without secrets `bubble all` stops naming them; outside development
 * mode a secret shorter than 32 bytes stops every role before it listens. Real processes of the
 * built CLI on a real redis-server.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import net from 'node:net';
import {
  BUBBLE_BIN,
  cleanEnv,
  freePort,
  RoleProcess,
  uniquePrefix,
  waitFor,
  type Exit,
  type Role,
} from '@bubble/test-utils';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRoleRig, type RoleRig } from '../support/role-rig.js';
import { httpCall, jsonBody } from '../support/http.js';
import { skippedWithout } from '../support/missing-tools.js';

const API_KEY = 'dev-mode-test-api-key-8e41c0b7d2a95f36';
/** Exactly the floor: 32 bytes. */
const JWT_SECRET = 'dev-mode-jwt-secret-4c2e9a7b1d5f';
const SHORT = 'x'.repeat(31);

/** Whether a TCP connection to host:port is accepted (false when refused). */
function accepts(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('development mode and secrets', () => {
  let rig: RoleRig;
  const runs: RoleProcess[] = [];

  beforeAll(async () => {
    rig = await startRoleRig('dev-mode');
  }, 300_000);

  afterAll(async () => {
    await rig?.stop();
  });

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.kill()));
  });

  function start(role: Role, port: number, env: Record<string, string>): RoleProcess {
    const run = new RoleProcess({ role, port, cwd: rig.cwd, env: { LOG_LEVEL: 'info', ...env } });
    runs.push(run);
    return run;
  }

  /**
   * Runs `bubble <role>` and keeps trying to connect to its port until it exits: the answer
   * says whether any attempt was accepted, so a refusal "before it listens" is checked.
   */
  async function runProbingPort(role: Role, port: number, env: Record<string, string>) {
    const run = start(role, port, env);
    let accepted = false;
    const probing = (async () => {
      while (run.alive) {
        if (await accepts(port)) accepted = true;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const exit: Exit = await run.waitExit();
    await probing;
    return { run, exit, accepted };
  }

  const onRedis = () => ({ REDIS_URL: rig.redis.url, BUBBLE_KEY_PREFIX: uniquePrefix('dev') });

  async function demoToken(port: number, host = '127.0.0.1'): Promise<number> {
    const reply = await httpCall(`http://${host}:${port}`, 'POST', '/demo/token', {
      body: { user: 'alice' },
    });
    if (reply.status === 200) expect(jsonBody(reply)).toMatchObject({ token: expect.any(String) });
    return reply.status;
  }

  it('bubble all on Redis without secrets and without BUBBLE_DEV stops before it listens, naming them', async () => {
    const port = await freePort();
    const { run, exit, accepted } = await runProbingPort('all', port, onRedis());
    expect(exit, run.describe()).toEqual({ code: 1, signal: null });
    expect(accepted).toBe(false);
    expect(run.stderr).toContain('BUBBLE_API_KEY');
    expect(run.stderr).toContain('BUBBLE_JWT_SECRET');
    expect(run.stderr).toContain('BUBBLE_DEV=1');
    expect(run.stderr).not.toContain('API key:');
  });

  it('bubble all on Redis with secrets serves, on every interface, without /demo/token', async () => {
    const port = await freePort();
    const run = start('all', port, {
      ...onRedis(),
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_SECRET: JWT_SECRET,
    });
    const line = await run.listening();
    expect(line).toMatchObject({ host: '0.0.0.0', development: false });
    expect(await demoToken(port)).toBe(404);
    // 0.0.0.0 also answers on another loopback address
    expect(await accepts(port, '127.0.0.2')).toBe(true);
    expect(run.stderr).not.toContain('development mode');
  });

  it('bubble all on Redis with BUBBLE_DEV=1 is in development mode: generated secrets, /demo/token', async () => {
    const port = await freePort();
    const run = start('all', port, { ...onRedis(), BUBBLE_DEV: '1' });
    const line = await run.listening();
    expect(line).toMatchObject({ host: '0.0.0.0', development: true });
    expect(await demoToken(port)).toBe(200);
    expect(run.stderr).toContain('development mode');
    expect(run.stderr).toMatch(/API key:\s+dev_/);
  });

  it('bubble all on the embedded engine without secrets serves /demo/token on loopback only', async () => {
    const port = await freePort();
    const run = start('all', port, {});
    const line = await run.listening();
    expect(line).toMatchObject({ host: '127.0.0.1', engine: 'memory', development: true });
    expect(await demoToken(port)).toBe(200);
    // bound to 127.0.0.1 itself: another address, even of lo, is refused
    expect(await accepts(port, '127.0.0.2')).toBe(false);
    expect(run.stderr).toContain(`http://localhost:${port}`);
    expect(run.stderr).toContain('loopback only');
  });

  it('bubble all on the embedded engine with configured secrets is not development mode', async () => {
    const port = await freePort();
    const run = start('all', port, { BUBBLE_API_KEY: API_KEY, BUBBLE_JWT_SECRET: JWT_SECRET });
    expect(await run.listening()).toMatchObject({ host: '0.0.0.0', development: false });
    expect(await demoToken(port)).toBe(404);
  });

  it('bubble server and bubble core need no secrets', async () => {
    for (const role of ['server', 'core'] as const) {
      await start(role, await freePort(), onRedis()).listening();
    }
  });

  const cases = (['server', 'core', 'gateway', 'all'] as const).flatMap((role) =>
    (['BUBBLE_API_KEY', 'BUBBLE_JWT_SECRET'] as const).map((name) => ({ role, name })),
  );
  it.each(cases)(
    'a $name of 31 bytes stops bubble $role before it listens, naming it',
    async ({ role, name }) => {
      const port = await freePort();
      const env: Record<string, string> = {
        ...onRedis(),
        BUBBLE_API_KEY: API_KEY,
        BUBBLE_JWT_SECRET: JWT_SECRET,
        [name]: SHORT,
      };
      const { run, exit, accepted } = await runProbingPort(role, port, env);
      expect(exit, run.describe()).toEqual({ code: 1, signal: null });
      expect(accepted).toBe(false);
      expect(run.stderr).toContain(`${name} is 31 bytes; it must be at least 32`);
      expect(run.lines.some((line) => String(line.msg).includes('listening'))).toBe(false);
      expect(run.stderr).not.toContain(SHORT);
    },
  );

  // util-linux's script(1) gives the process a pseudo-terminal as stdout.
  const script = ['/usr/bin/script', '/bin/script'].find((candidate) => {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  const ON_A_TERMINAL = 'on a terminal the logs are readable lines, not JSON';
  it.skipIf(skippedWithout('script', script, ON_A_TERMINAL))(ON_A_TERMINAL, async () => {
    const port = await freePort();
    const child = spawn(script!, ['-qfec', `${process.execPath} ${BUBBLE_BIN} all`, '/dev/null'], {
      cwd: rig.cwd,
      env: cleanEnv({ LOG_LEVEL: 'info', PORT: String(port), NO_COLOR: '1' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    try {
      await waitFor(() => output.includes('bubble all is listening'), {
        timeoutMs: 30_000,
        message: `never listened on a terminal:\n${output}`,
      });
      const plain = output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
      expect(plain).toMatch(
        /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO \(bubble-all\/\d+\): bubble all is listening/m,
      );
      expect(plain).not.toMatch(/^\{"level"/m);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('BUBBLE_DEV=1 with NODE_ENV=production stops, naming both', async () => {
    const port = await freePort();
    const { run, exit, accepted } = await runProbingPort('all', port, {
      BUBBLE_DEV: '1',
      NODE_ENV: 'production',
    });
    expect(exit.code).toBe(1);
    expect(accepted).toBe(false);
    expect(run.stderr).toContain('BUBBLE_DEV');
    expect(run.stderr).toContain('NODE_ENV=production');
  });
});

/**
 * Runs a compose file's services as local processes, the way `docker compose up` would run
 * them in containers: the file read with the `yaml` package (merge keys, `${VAR…}`
 * interpolation), every service name mapped to 127.0.0.1 and a free port per container port,
 * redis services as `redis-server` with their own flags (plus --port, --bind, --dir), one-shot
 * shell services with host names rewritten, and bubble services as the image's ENTRYPOINT plus
 * the service's command from the built tree with the image's ENV and the service's environment.
 * depends_on is honoured (service_healthy runs the service's own healthcheck until it passes,
 * service_completed_successfully waits for exit 0) and `scale` (or an override) starts that many.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cleanEnv, diesWithParent, findExecutable, freePort, waitFor } from '@bubble/test-utils';
import YAML from 'yaml';
import { execForm, lastArgs, readDockerfile, stageEnv, type Stage } from './dockerfile.js';

const START_DEADLINE_MS = 40_000;
const EXIT_DEADLINE_MS = 15_000;
const OUTPUT_TAIL = 6_000;

// ------------------------------------------------------------------------ the file, as data

type Condition = 'service_started' | 'service_healthy' | 'service_completed_successfully';

export interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  healthcheck?: { test?: string | string[]; disable?: boolean };
  depends_on?: string[] | Record<string, { condition?: Condition }>;
  scale?: number;
  ports?: Array<string | number>;
  restart?: string;
  container_name?: string;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
}

/**
 * Compose's interpolation: `$$` is a dollar; `${VAR}`, `$VAR`, `${VAR:-default}`,
 * `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`.
 */
export function interpolate(text: string, variables: Record<string, string | undefined>): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, braced?: string, operator?: string, operand?: string, bare?: string) => {
      if (whole === '$$') return '$';
      const name = (braced ?? bare)!;
      const value = variables[name];
      const missing = operator?.startsWith(':') ? !value : value === undefined;
      if (!missing || !operator) return value ?? '';
      if (operator.endsWith('?')) throw new Error(`compose: ${name}: ${operand || 'is required'}`);
      return operand ?? '';
    },
  );
}

function interpolateAll(value: unknown, variables: Record<string, string | undefined>): unknown {
  if (typeof value === 'string') return interpolate(value, variables);
  if (Array.isArray(value)) return value.map((item) => interpolateAll(item, variables));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateAll(item, variables)]),
    );
  }
  return value;
}

export function loadComposeFile(
  file: string,
  variables: Record<string, string | undefined>,
): ComposeFile {
  const parsed = YAML.parse(readFileSync(file, 'utf8'), { merge: true }) as ComposeFile;
  if (!parsed?.services) throw new Error(`${file}: no services`);
  return interpolateAll(parsed, variables) as ComposeFile;
}

export function serviceEnvironment(service: ComposeService): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((pair) => {
        const eq = pair.indexOf('=');
        return eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(
    Object.entries(env).map(([key, value]) => [key, value === null ? '' : String(value)]),
  );
}

export function dependencies(service: ComposeService): Array<[string, Condition]> {
  const deps = service.depends_on ?? [];
  if (Array.isArray(deps)) return deps.map((name) => [name, 'service_started']);
  return Object.entries(deps).map(([name, d]) => [name, d.condition ?? 'service_started']);
}

/** Services in an order that starts every one after what it depends on. */
export function startOrder(file: ComposeFile): string[] {
  const order: string[] = [];
  const visiting = new Set<string>();
  const visit = (name: string) => {
    if (order.includes(name)) return;
    if (visiting.has(name)) throw new Error(`compose: depends_on cycle through ${name}`);
    const service = file.services[name];
    if (!service) throw new Error(`compose: depends_on names an unknown service ${name}`);
    visiting.add(name);
    for (const [dep] of dependencies(service)) visit(dep);
    visiting.delete(name);
    order.push(name);
  };
  for (const name of Object.keys(file.services)) visit(name);
  return order;
}

function words(value: string | string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value : value.split(/\s+/).filter((w) => w !== '');
}

// ---------------------------------------------------------------------------- processes

export class Instance {
  output = '';
  /** The JSON log lines at level warn (40) or above, every one (the output keeps a tail). */
  readonly warnings: Array<{ level: number; msg: string }> = [];
  private partial = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  readonly exited: Promise<void>;
  startedAt = 0;
  readyAt: number | undefined;

  constructor(
    readonly service: string,
    readonly index: number,
    /** container port → host port */
    readonly ports: Map<number, number>,
    readonly env: Record<string, string>,
    readonly child: ChildProcess,
    readonly dir: string | undefined,
  ) {
    this.startedAt = Date.now();
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-OUTPUT_TAIL);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.stdout?.on('data', (chunk: Buffer) => this.readWarnings(chunk.toString('utf8')));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve();
      });
      child.once('error', (err) => {
        this.output += `\nspawn failed: ${err.message}`;
        if (child.pid === undefined) {
          this.exit = { code: null, signal: null };
          resolve();
        }
      });
    });
  }

  get name(): string {
    return `${this.service}#${this.index}`;
  }

  private readWarnings(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      try {
        const parsed = JSON.parse(line) as { level?: unknown; msg?: unknown };
        if (typeof parsed.level === 'number' && parsed.level >= 40)
          this.warnings.push({ level: parsed.level, msg: String(parsed.msg) });
      } catch {
        // not a log line
      }
    }
  }

  port(containerPort: number): number {
    const port = this.ports.get(containerPort);
    if (port === undefined) throw new Error(`${this.name} has no container port ${containerPort}`);
    return port;
  }

  describe(): string {
    return `--- ${this.name} (exit ${JSON.stringify(this.exit)})\n${this.output}`;
  }
}

export interface ComposeRunOptions {
  root: string;
  /** The compose file, relative to root. */
  file: string;
  /** What `.env` would hold (and the shell's variables). */
  variables: Record<string, string>;
  /** `--scale service=N` */
  scale?: Record<string, number>;
}

export class ComposeRun {
  readonly instances: Instance[] = [];
  /** Every service's instances, in the order they were started. */
  readonly started: string[] = [];
  readonly file: ComposeFile;
  private readonly image: Stage;
  private readonly hostPorts = new Map<string, Map<number, number>>();

  private constructor(readonly options: ComposeRunOptions) {
    this.file = loadComposeFile(path.join(options.root, options.file), options.variables);
    this.image = readDockerfile(options.root).at(-1)!;
  }

  static async start(options: ComposeRunOptions): Promise<ComposeRun> {
    const run = new ComposeRun(options);
    try {
      await run.up();
      return run;
    } catch (err) {
      const tails = run.instances.map((i) => i.describe()).join('\n');
      await run.down();
      throw new Error(`${(err as Error).message}\n${tails}`, { cause: err });
    }
  }

  of(service: string): Instance[] {
    return this.instances.filter((i) => i.service === service);
  }

  /** The host port a `ports:` entry publishes, and the instance behind it. */
  published(hostPort: number): { instance: Instance; port: number } {
    for (const instance of this.instances) {
      for (const entry of this.file.services[instance.service]!.ports ?? []) {
        const parts = String(entry).split(':');
        const target = Number(parts.at(-1));
        const published = Number(parts.length >= 2 ? parts.at(-2) : parts.at(-1));
        if (published === hostPort) return { instance, port: instance.port(target) };
      }
    }
    throw new Error(`${this.options.file}: nothing publishes port ${hostPort}`);
  }

  private kind(name: string): 'bubble' | 'redis' {
    const service = this.file.services[name]!;
    if (service.build !== undefined || /bubble/.test(service.image ?? '')) return 'bubble';
    if (/^redis(:|$)/.test(service.image ?? '')) return 'redis';
    throw new Error(`compose: service ${name} runs ${service.image}, which the test cannot run`);
  }

  private instanceCount(name: string): number {
    return this.options.scale?.[name] ?? this.file.services[name]!.scale ?? 1;
  }

  /** The container ports of one instance of a service. */
  private containerPorts(name: string): number[] {
    const service = this.file.services[name]!;
    if (this.kind(name) === 'redis') {
      const argv = words(service.command) ?? [];
      const flag = argv.indexOf('--port');
      return argv[0] === 'redis-server' ? [flag >= 0 ? Number(argv[flag + 1]) : 6379] : [];
    }
    const env = { ...stageEnv(this.image), ...serviceEnvironment(service) };
    const ports = [Number(env.PORT || 8080)];
    if (env.BUBBLE_INTERNAL_PORT) ports.push(Number(env.BUBBLE_INTERNAL_PORT));
    return ports;
  }

  /**
   * `service:port` and `-h service -p port` in a value, for every service, become 127.0.0.1 and
   * the host port of that service's first instance. A service name left over is an error.
   */
  rewriteHosts(value: string): string {
    let out = value;
    for (const [service, ports] of this.hostPorts) {
      const name = service.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      for (const [containerPort, hostPort] of ports) {
        out = out
          .replace(
            new RegExp(`(?<![\\w.-])${name}:${containerPort}(?![\\d])`, 'g'),
            `127.0.0.1:${hostPort}`,
          )
          .replace(
            new RegExp(`-h ${name} -p ${containerPort}(?![\\d])`, 'g'),
            `-h 127.0.0.1 -p ${hostPort}`,
          );
      }
    }
    for (const service of Object.keys(this.file.services)) {
      if (new RegExp(`(?<![\\w.-])${service}(?=:\\d|\\s+-p)`).test(out))
        throw new Error(`compose: cannot map the host ${service} in ${JSON.stringify(out)}`);
    }
    return out;
  }

  private async up(): Promise<void> {
    for (const name of startOrder(this.file)) {
      const service = this.file.services[name]!;
      if (service.container_name && this.instanceCount(name) > 1)
        throw new Error(`compose: ${name} has a container_name and cannot scale`);
      for (const [dep, condition] of dependencies(service)) await this.reach(dep, condition);
      for (let index = 1; index <= this.instanceCount(name); index++) {
        await this.startInstance(name, index);
      }
      this.started.push(name);
    }
    for (const name of Object.keys(this.file.services)) {
      const oneShot = this.file.services[name]!.restart === 'no';
      await this.reach(name, oneShot ? 'service_completed_successfully' : 'service_healthy');
    }
  }

  private async reach(name: string, condition: Condition): Promise<void> {
    for (const instance of this.of(name)) {
      if (instance.readyAt !== undefined || condition === 'service_started') continue;
      if (condition === 'service_completed_successfully') {
        await waitFor(() => instance.exit, {
          timeoutMs: START_DEADLINE_MS,
          intervalMs: 50,
          message: `${instance.name} never completed`,
        });
        if (instance.exit!.code !== 0)
          throw new Error(`${instance.name} did not complete successfully\n${instance.describe()}`);
      } else {
        const outcome = await waitFor(
          () => (instance.exit ? 'exited' : this.healthcheck(instance) === 0 && 'healthy'),
          {
            timeoutMs: START_DEADLINE_MS,
            intervalMs: 200,
            message: `${instance.name} never became healthy\n${instance.describe()}`,
          },
        );
        if (outcome === 'exited')
          throw new Error(`${instance.name} exited before it was healthy\n${instance.describe()}`);
      }
      instance.readyAt = Date.now();
    }
  }

  /** Runs the service's healthcheck command inside its "container" (its env, its ports). */
  healthcheck(instance: Instance): number {
    const test = this.file.services[instance.service]!.healthcheck?.test;
    if (!test || test[0] === 'NONE')
      throw new Error(`compose: ${instance.service} has no healthcheck`);
    const containerLocal = (text: string) =>
      this.kind(instance.service) === 'redis'
        ? text.replace(/\bredis-cli\b/g, `redis-cli -p ${instance.port(6379)}`)
        : text;
    let argv: string[];
    if (typeof test === 'string' || test[0] === 'CMD-SHELL') {
      const script = typeof test === 'string' ? test : test.slice(1).join(' ');
      argv = ['/bin/sh', '-c', containerLocal(script)];
    } else if (test[0] === 'CMD') {
      argv = this.localCommand(test.slice(1).map(containerLocal));
    } else {
      throw new Error(`compose: ${instance.service}: unknown healthcheck form ${test[0]}`);
    }
    const result = spawnSync(argv[0]!, argv.slice(1), {
      cwd: instance.dir ?? this.options.root,
      env: instance.env,
      stdio: 'ignore',
      timeout: 5_000,
    });
    return result.status ?? -1;
  }

  /** A container command as a local one: node is this node, tini is left out (not PID 1 here). */
  private localCommand(argv: string[]): string[] {
    let rest = argv;
    if (rest[0] === 'tini') rest = rest.slice(rest.indexOf('--') + 1);
    if (rest[0] === 'node') return [process.execPath, ...rest.slice(1)];
    if (rest[0] === 'sh') return ['/bin/sh', ...rest.slice(1)];
    return rest;
  }

  private async startInstance(name: string, index: number): Promise<void> {
    const service = this.file.services[name]!;
    const ports = new Map<number, number>();
    for (const containerPort of this.containerPorts(name))
      ports.set(containerPort, await freePort());
    if (index === 1) this.hostPorts.set(name, ports);
    const env: Record<string, string> = cleanEnv();
    let argv: string[];
    let dir: string | undefined;
    if (this.kind(name) === 'bubble') {
      const image = stageEnv(this.image);
      const serviceEnv = serviceEnvironment(service);
      const rewritten = Object.fromEntries(
        Object.entries(serviceEnv).map(([key, value]) => [key, this.rewriteHosts(value)]),
      );
      Object.assign(env, image, rewritten);
      env.PORT = String(ports.get(Number(env.PORT || 8080)));
      if (env.BUBBLE_INTERNAL_PORT)
        env.BUBBLE_INTERNAL_PORT = String(ports.get(Number(env.BUBBLE_INTERNAL_PORT)));
      const entrypoint =
        words(service.entrypoint) ??
        execForm(lastArgs(this.image, 'ENTRYPOINT') ?? '[]', 'ENTRYPOINT');
      const command =
        words(service.command) ?? execForm(lastArgs(this.image, 'CMD') ?? '[]', 'CMD');
      argv = this.localCommand([...entrypoint, ...command]);
    } else {
      const command = (words(service.command) ?? []).map((part) => this.rewriteHosts(part));
      const entrypoint = words(service.entrypoint) ?? [];
      const full = [...entrypoint, ...command];
      if (full[0] === 'redis-server') {
        dir = mkdtempSync(path.join(tmpdir(), `bubble-compose-${name}-`));
        const port = ports.get(this.containerPorts(name)[0]!)!;
        const binary = findExecutable('redis-server');
        if (!binary) throw new Error('redis-server is not installed');
        argv = [binary, ...full.slice(1), '--port', String(port), '--bind', '127.0.0.1'];
        argv.push('--dir', dir, '--daemonize', 'no', '--protected-mode', 'no');
      } else {
        argv = this.localCommand(full);
      }
    }
    const [command, ...args] = diesWithParent(argv);
    const child = spawn(command!, args, {
      cwd: dir ?? this.options.root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.instances.push(new Instance(name, index, ports, env, child, dir));
  }

  /**
   * As `docker compose down`: services in reverse start order (the gateways drain while Redis
   * still answers), each one's instances SIGTERMed together, SIGKILL after a deadline; temp
   * dirs removed.
   */
  async down(): Promise<void> {
    const services = [...new Set(this.instances.map((i) => i.service))].reverse();
    for (const service of services) await this.stop(this.of(service));
  }

  private async stop(instances: Instance[]): Promise<void> {
    for (const instance of instances) if (!instance.exit) instance.child.kill('SIGTERM');
    await Promise.all(
      instances.map(async (instance) => {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          instance.exited,
          new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              instance.child.kill('SIGKILL');
              resolve();
            }, EXIT_DEADLINE_MS);
          }),
        ]);
        clearTimeout(timer);
        if (instance.dir) rmSync(instance.dir, { recursive: true, force: true });
      }),
    );
  }
}

// ------------------------------------------------------------------- docker-compose config

export const dockerCompose = findExecutable('docker-compose');

/** `docker-compose -f <file> config` with only these variables (an empty --env-file). */
export function composeConfig(
  root: string,
  file: string,
  variables: Record<string, string>,
): { status: number | null; stdout: string; stderr: string } {
  if (!dockerCompose) throw new Error('docker-compose is not installed');
  const dir = mkdtempSync(path.join(tmpdir(), 'bubble-compose-env-'));
  try {
    const envFile = path.join(dir, 'empty.env');
    writeFileSync(envFile, '');
    const result = spawnSync(
      dockerCompose,
      ['--env-file', envFile, '-f', path.join(root, file), 'config'],
      { cwd: root, env: cleanEnv(variables), encoding: 'utf8', timeout: 60_000 },
    );
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

import { MAX_MINTED_TTL_SECONDS, mintToken } from '@bubble/gateway';
import { Command, InvalidArgumentError } from 'commander';
import { runBench, SCENARIOS } from './bench-command.js';
import { loadConfig } from './config.js';
import { addDeadCommand } from './dead-command.js';
import { createLogger } from './logger.js';
import { urlOption } from './remote.js';
import { startRole, type Role } from './roles/roles.js';
import { developmentSecrets, resolveStartSecrets, tokenSecret } from './secrets.js';
import { exitOnSignals, shutdownDeadlineMs } from './shutdown.js';
import { durationOption, intOption, numberOption, prefixOption } from './option-parsers.js';
import { formatSummary } from './sim-report.js';
import { LIMITS, runSimulate, type SimulateOptions } from './simulate-command.js';
import { runStatus, type StatusOptions } from './status-command.js';
import { hasRedis } from './store-factory.js';
import { runWebhookReceiver } from './webhook-receiver-command.js';

export async function main(argv: string[]): Promise<void> {
  const program = new Command('bubble')
    .description('unread badges, computed for online users and pushed live')
    .showHelpAfterError();

  const roles: Array<[Role, string]> = [
    ['all', 'every role in one process (in memory without REDIS_URL, Redis with it)'],
    ['server', 'bubble-server: leader election, pool assignment, sweep ticks (needs Redis)'],
    ['core', 'bubble-core: computes the badges of the pools it leases (needs Redis)'],
    ['gateway', 'the HTTP API (needs Redis)'],
  ];
  for (const [role, description] of roles) {
    program
      .command(role)
      .description(description)
      .action(async () => {
        const config = loadConfig();
        if (role !== 'all' && !hasRedis(config)) {
          throw new Error(`bubble ${role} needs REDIS_URL or REDIS_CLUSTER_NODES`);
        }
        // Decided before the logger exists and before anything listens.
        const start = resolveStartSecrets(role, config);
        const logger = createLogger(config.LOG_LEVEL, `bubble-${role}`);
        // Signals are handled from the start: a role still waiting for Redis stops at once.
        const waiting = new AbortController();
        const starting = startRole(role, config, start, logger, waiting.signal);
        exitOnSignals(
          async () => {
            waiting.abort(new Error('stopped before it started'));
            const started = await starting.catch(() => null);
            await started?.close();
          },
          logger,
          shutdownDeadlineMs(role, config),
        );
        const running = await starting.catch((err: unknown) => {
          // The shutdown above owns the exit then.
          if (waiting.signal.aborted) return new Promise<never>(() => {});
          throw err;
        });
        if (start.development && start.secrets?.generated) {
          const generatedKey = config.BUBBLE_API_KEY === undefined;
          printDevelopmentBanner(
            running.url,
            generatedKey ? start.secrets.auth.apiKey : null,
            start.host,
          );
        }
      });
  }

  program
    .command('token')
    .description('print a JWT for <user> signed with BUBBLE_JWT_SECRET')
    .argument('<user>', 'the user id (the token subject)')
    .option(
      '--ttl <duration>',
      'lifetime, e.g. 30s, 15m, 1h, 7d (at most 30d)',
      durationOption(1, 366 * 86_400),
      3600,
    )
    .action(async (user: string, options: { ttl: number }) => {
      const config = loadConfig();
      // A token outliving BUBBLE_JWT_MAX_TOKEN_AGE would be refused before it expires.
      const maxTtl = Math.min(MAX_MINTED_TTL_SECONDS, config.BUBBLE_JWT_MAX_TOKEN_AGE ?? Infinity);
      if (options.ttl > maxTtl) {
        throw new InvalidArgumentError(
          `--ttl is at most ${maxTtl} s` +
            (maxTtl < MAX_MINTED_TTL_SECONDS ? ' (BUBBLE_JWT_MAX_TOKEN_AGE)' : ' (30 days)'),
        );
      }
      const token = await mintToken({
        secret: tokenSecret(config),
        user,
        ttlSeconds: options.ttl,
        audience: config.BUBBLE_JWT_AUDIENCE,
        issuer: config.BUBBLE_JWT_ISSUER,
      });
      process.stdout.write(`${token}\n`);
    });

  program
    .command('dev-env')
    .description('print shell exports of the development API key and JWT secret')
    .action(() => {
      const config = loadConfig();
      const { auth } = developmentSecrets(config);
      process.stdout.write(
        `export BUBBLE_API_KEY='${auth.apiKey}'\nexport BUBBLE_JWT_SECRET='${auth.jwtSecret}'\n`,
      );
    });

  program
    .command('bench')
    .description(
      `run benchmarks of docs/benchmarks.md: ${Object.keys(SCENARIOS).join(', ')} (default all)`,
    )
    .argument('[scenario...]', 'scenario ids')
    .action(async (names: string[]) => {
      await runBench(names);
      process.exit(0);
    });

  const urlHelp = 'the gateway (default $BUBBLE_URL, else http://127.0.0.1:$PORT)';
  program
    .command('status')
    .description('the cluster at a glance (leader, nodes, pools, sweeps) from GET /v1/cluster')
    .option('--url <url>', urlHelp, urlOption)
    .option('--json', 'print the cluster status as JSON')
    .option('--timeout <seconds>', 'give up after this long', intOption(1, 120), 10)
    .action(async (options: StatusOptions) => {
      await runStatus(options);
    });

  program
    .command('simulate')
    .description(
      'drive a running gateway with a synthetic platform (users, follows, posts, WebSocket clients)',
    )
    .option('--url <url>', urlHelp, urlOption)
    .option('--users <n>', 'simulated users', intOption(...LIMITS.users), 1000)
    .option('--rate <posts/s>', 'posts per second', numberOption(...LIMITS.rate), 50)
    .option(
      '--clients <n>',
      'WebSocket clients (at most --users)',
      intOption(...LIMITS.clients),
      100,
    )
    .option(
      '--duration <time>',
      'how long to run after setup, in seconds or 30s, 5m, 1h',
      durationOption(...LIMITS.duration),
      60,
    )
    .option('--seed <n>', 'seed of the follow graph and the workload', intOption(...LIMITS.seed), 1)
    .option('--prefix <id>', 'prefix of the simulated user ids', prefixOption, 'sim-u')
    .option('--json', 'print the summary as one JSON line')
    .action(async (options: SimulateOptions) => {
      const summary = await runSimulate(options);
      process.stdout.write(options.json ? `${JSON.stringify(summary)}\n` : formatSummary(summary));
      if (summary.stoppedBy === 'unauthorized') {
        process.stderr.write('stopped: the gateway refused the API key\n');
        process.exit(1);
      }
      process.exit(0);
    });

  addDeadCommand(program);

  program
    .command('webhook-receiver')
    .description(
      'an example push service for offline delivery: verifies each signature (BUBBLE_WEBHOOK_SECRET), prints each delivery as a JSON line',
    )
    .option('--port <n>', 'port to listen on (0: any free one)', intOption(0, 65_535), 9090)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .action(async (options: { port: number; host: string }) => {
      await runWebhookReceiver(options);
    });

  program.addHelpText(
    'after',
    [
      '',
      'Examples:',
      '  npx bubble all                        every role in one process on http://localhost:8080',
      '  open http://localhost:8080/dashboard  the cluster in a browser (paste the API key)',
      '  npx bubble status                     the cluster at a glance, in the terminal',
      '  npx bubble simulate --duration 30s    a synthetic platform driving the gateway',
    ].join('\n'),
  );

  await program.parseAsync(argv);
}

/** Shows only generated secrets: a configured one never reaches the terminal or a log. */
function printDevelopmentBanner(url: string, apiKey: string | null, host: string): void {
  const where =
    host === '127.0.0.1'
      ? 'loopback only; configure the secrets, or set BUBBLE_DEV=1, to listen beyond it'
      : 'BUBBLE_DEV=1: on every interface';
  const lines = [
    '',
    `  bubble is running at ${url} (development mode, ${where})`,
    `  API key:        ${apiKey ?? '(BUBBLE_API_KEY, as configured)'}`,
    '  mint a token:   npx bubble token <user>',
    '  load both:      eval "$(npx bubble dev-env)"',
    '  (generated secrets are kept in .bubble-dev/)',
  ];
  process.stderr.write(`${[...lines, '', ''].join('\n')}`);
}

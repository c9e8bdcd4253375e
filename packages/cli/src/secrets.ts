import type { AuthOptions } from '@bubble/gateway';
import { ConfigError, isProduction, type Config } from './config.js';
import { loadDevSecrets, loadOrCreateDevSecrets } from './dev-secrets.js';
import type { Role } from './roles/roles.js';
import { hasRedis } from './store-factory.js';

/** The floor for every secret outside development mode (HS256 wants a key of the hash's size). */
const MIN_SECRET_BYTES = 32;

const SECRET_VARIABLES = ['BUBBLE_API_KEY', 'BUBBLE_JWT_SECRET'] as const;
type SecretVariable = (typeof SECRET_VARIABLES)[number];

/** The roles that answer platform and client calls, and so need both secrets. */
const ROLES_NEEDING_SECRETS: ReadonlySet<Role> = new Set(['all', 'gateway']);

export interface ResolvedSecrets {
  auth: AuthOptions;
  /** True when a secret was generated for development rather than configured. */
  generated: boolean;
}

export interface StartSecrets {
  /** Null for the roles that serve no platform or client route (server, core). */
  secrets: ResolvedSecrets | null;
  /** `bubble all`'s development mode: generated secrets, POST /demo/token, loopback. */
  development: boolean;
  /** Where the public port listens: loopback in development mode without BUBBLE_DEV=1. */
  host: string;
}

/** A platform that signs its own tokens (BUBBLE_JWT_PUBLIC_KEY) needs no shared JWT secret. */
function missingSecrets(config: Config): SecretVariable[] {
  return SECRET_VARIABLES.filter(
    (name) =>
      config[name] === undefined &&
      !(name === 'BUBBLE_JWT_SECRET' && config.BUBBLE_JWT_PUBLIC_KEY !== undefined),
  );
}

/** How end-user tokens are checked, beside the keys that verify them. */
function tokenChecks(config: Config): Omit<AuthOptions, 'apiKey' | 'jwtSecret'> {
  return {
    jwtAudience: config.BUBBLE_JWT_AUDIENCE,
    jwtIssuer: config.BUBBLE_JWT_ISSUER,
    jwtPublicKey: config.BUBBLE_JWT_PUBLIC_KEY,
    maxTokenAgeSeconds: config.BUBBLE_JWT_MAX_TOKEN_AGE,
  };
}

/**
 * Development mode is `bubble all`'s, outside production: on the embedded engine (which then
 * listens on loopback only) when a secret is missing, or anywhere with BUBBLE_DEV=1. On Redis
 * without the secrets and without BUBBLE_DEV=1 it stops, naming what is missing.
 */
function isDevelopmentMode(role: Role, config: Config): boolean {
  if (role !== 'all') return false;
  if (isProduction(config)) {
    if (config.BUBBLE_DEV) {
      throw new ConfigError('BUBBLE_DEV=1 cannot be combined with NODE_ENV=production');
    }
    return false;
  }
  if (config.BUBBLE_DEV) return true;
  const missing = missingSecrets(config);
  if (missing.length === 0) return false;
  if (hasRedis(config)) {
    throw new ConfigError(
      `bubble all on Redis needs ${missing.join(' and ')} (at least ${MIN_SECRET_BYTES} bytes ` +
        'each); set BUBBLE_DEV=1 to run it in development mode with generated secrets instead',
    );
  }
  return true;
}

/** Outside development mode every secret that is set, whatever the role, is long enough. */
function checkSecretLengths(config: Config): void {
  for (const name of SECRET_VARIABLES) {
    const value = config[name];
    if (value !== undefined && Buffer.byteLength(value, 'utf8') < MIN_SECRET_BYTES) {
      throw new ConfigError(
        `${name} is ${Buffer.byteLength(value, 'utf8')} bytes; it must be at least ` +
          `${MIN_SECRET_BYTES} (e.g. \`openssl rand -base64 32\`)`,
      );
    }
  }
}

/**
 * What a role starts with, decided before anything listens. The gateway and `bubble all` need
 * BUBBLE_API_KEY and BUBBLE_JWT_SECRET; server and core use neither but refuse a short one, so
 * that a deployment's shared environment is checked wherever it is read.
 */
export function resolveStartSecrets(role: Role, config: Config): StartSecrets {
  const development = isDevelopmentMode(role, config);
  const host = development && !config.BUBBLE_DEV ? '127.0.0.1' : '0.0.0.0';
  if (!development) checkSecretLengths(config);
  if (!ROLES_NEEDING_SECRETS.has(role)) return { secrets: null, development, host };
  const { BUBBLE_API_KEY: apiKey, BUBBLE_JWT_SECRET: jwtSecret } = config;
  if (apiKey && missingSecrets(config).length === 0) {
    return {
      secrets: { auth: { apiKey, jwtSecret, ...tokenChecks(config) }, generated: false },
      development,
      host,
    };
  }
  if (!development) {
    throw new ConfigError(
      `bubble ${role} needs ${missingSecrets(config).join(' and ')} (at least ` +
        `${MIN_SECRET_BYTES} bytes each)`,
    );
  }
  const dev = loadOrCreateDevSecrets();
  return {
    secrets: {
      auth: {
        apiKey: apiKey ?? dev.apiKey,
        jwtSecret: jwtSecret ?? dev.jwtSecret,
        ...tokenChecks(config),
      },
      generated: true,
    },
    development,
    host,
  };
}

/** `bubble dev-env`: the generated development secrets (created when absent). */
export function developmentSecrets(config: Config): ResolvedSecrets {
  if (isProduction(config)) throw new ConfigError('dev-env prints development secrets only');
  if (missingSecrets(config).length === 0) {
    throw new ConfigError('secrets are configured; dev-env only prints generated ones');
  }
  const dev = loadOrCreateDevSecrets();
  return {
    auth: {
      apiKey: config.BUBBLE_API_KEY ?? dev.apiKey,
      jwtSecret: config.BUBBLE_JWT_SECRET ?? dev.jwtSecret,
      ...tokenChecks(config),
    },
    generated: true,
  };
}

/** The JWT secret for `bubble token`: configured, else the development one. */
export function tokenSecret(config: Config): string {
  if (config.BUBBLE_JWT_SECRET) return config.BUBBLE_JWT_SECRET;
  const dev = isProduction(config) ? null : loadDevSecrets();
  if (!dev)
    throw new ConfigError(
      config.BUBBLE_JWT_PUBLIC_KEY
        ? 'tokens are signed by the platform (BUBBLE_JWT_PUBLIC_KEY): bubble token needs BUBBLE_JWT_SECRET'
        : 'BUBBLE_JWT_SECRET must be set (or run `bubble all` once in development)',
    );
  return dev.jwtSecret;
}

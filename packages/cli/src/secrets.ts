import type { AuthOptions } from '@bubble/gateway';
import { isProduction, type Config } from './config.js';
import { loadDevSecrets, loadOrCreateDevSecrets } from './dev-secrets.js';

export interface ResolvedSecrets {
  auth: AuthOptions;
  /** True when the secrets were generated for development rather than configured. */
  generated: boolean;
}

/**
 * Configured secrets win. Without them, only `bubble all` outside production may run, on
 * generated development secrets; every other case stops before anything listens.
 */
export function resolveSecrets(config: Config, allowDevelopment: boolean): ResolvedSecrets {
  const {
    BUBBLE_API_KEY: apiKey,
    BUBBLE_JWT_SECRET: jwtSecret,
    BUBBLE_JWT_AUDIENCE: jwtAudience,
  } = config;
  if (apiKey && jwtSecret) return { auth: { apiKey, jwtSecret, jwtAudience }, generated: false };
  if (!allowDevelopment || isProduction(config)) {
    const missing = [!apiKey && 'BUBBLE_API_KEY', !jwtSecret && 'BUBBLE_JWT_SECRET'].filter(
      Boolean,
    );
    throw new Error(`${missing.join(' and ')} must be set`);
  }
  const dev = loadOrCreateDevSecrets();
  return {
    auth: { apiKey: apiKey ?? dev.apiKey, jwtSecret: jwtSecret ?? dev.jwtSecret, jwtAudience },
    generated: true,
  };
}

/** The JWT secret for `bubble token`: configured, else the development one. */
export function tokenSecret(config: Config): string {
  if (config.BUBBLE_JWT_SECRET) return config.BUBBLE_JWT_SECRET;
  const dev = isProduction(config) ? null : loadDevSecrets();
  if (!dev)
    throw new Error('BUBBLE_JWT_SECRET must be set (or run `bubble all` once in development)');
  return dev.jwtSecret;
}

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DevSecrets {
  apiKey: string;
  jwtSecret: string;
}

/**
 * Development only: secrets generated once and kept in .bubble-dev/ (git-ignored) so that
 * restarts, `bubble token` and `bubble dev-env` agree without anything being configured.
 */
function devSecretsPath(cwd = process.cwd()): string {
  return join(cwd, '.bubble-dev', 'secrets.json');
}

export function loadDevSecrets(cwd = process.cwd()): DevSecrets | null {
  try {
    const parsed = JSON.parse(readFileSync(devSecretsPath(cwd), 'utf8')) as Partial<DevSecrets>;
    if (typeof parsed.apiKey === 'string' && typeof parsed.jwtSecret === 'string') {
      return { apiKey: parsed.apiKey, jwtSecret: parsed.jwtSecret };
    }
  } catch {
    // absent or unreadable: generate anew
  }
  return null;
}

export function loadOrCreateDevSecrets(cwd = process.cwd()): DevSecrets {
  const existing = loadDevSecrets(cwd);
  if (existing) return existing;
  const secrets = {
    apiKey: `dev_${randomBytes(18).toString('base64url')}`,
    jwtSecret: randomBytes(32).toString('base64url'),
  };
  mkdirSync(join(cwd, '.bubble-dev'), { recursive: true, mode: 0o700 });
  writeFileSync(devSecretsPath(cwd), JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}

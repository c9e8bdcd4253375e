export { main } from './main.js';
export { shutdownDeadlineMs } from './shutdown.js';
export { loadConfig, configSchema, ConfigError, type Config } from './config.js';
export { startRole, type Role, type RunningRole } from './roles/roles.js';
export { resolveStartSecrets, type StartSecrets } from './secrets.js';
export {
  assessRedisSettings,
  type RedisPurpose,
  type RedisSettings,
} from './redis-settings-check.js';

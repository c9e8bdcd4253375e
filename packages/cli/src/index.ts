export { main, parseDuration } from './main.js';
export { loadConfig, configSchema, ConfigError, type Config } from './config.js';
export { startAll, type RunningRole } from './roles/all.js';
export { resolveSecrets } from './secrets.js';

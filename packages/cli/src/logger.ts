import { pino, type Logger } from 'pino';

/** JSON logs on stdout; credentials are redacted wherever they might appear. */
export function createLogger(level: string, name: string): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'headers.authorization',
        'headers["x-api-key"]',
        '*.token',
        '*.apiKey',
        '*.jwtSecret',
      ],
      censor: '[redacted]',
    },
  });
}

import { pino, type Logger, type LoggerOptions } from 'pino';
import PinoPretty from 'pino-pretty';

/**
 * Logs on stdout: JSON lines for machines (a file, a pipe, a log collector), readable lines
 * when stdout is a terminal. Credentials are redacted wherever they might appear, either way.
 */
export function createLogger(
  level: string,
  name: string,
  terminal: boolean = process.stdout.isTTY === true,
): Logger {
  const options: LoggerOptions = {
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
  };
  if (!terminal) return pino(options);
  // In this thread and synchronous: nothing is lost when the process exits right after a line.
  // Colours as the terminal supports them (NO_COLOR turns them off).
  return pino(options, PinoPretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l' }));
}

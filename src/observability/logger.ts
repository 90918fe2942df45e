/** Logs: pino, JSON by default, pretty when stdout is a terminal and pino-pretty is installed. */
import { createRequire } from 'node:module';
import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';
import { maskFields, maskValue } from '../redis/connection.js';

export type { Logger };

function prettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/**
 * Masks every argument of a log call (its fields, errors and message): a URL's password and its
 * secret-named query parameters never reach a log line (see maskText in ../redis/connection.ts).
 */
const hooks: LoggerOptions['hooks'] = {
  logMethod(args, method) {
    const masked = args.map((a) =>
      a !== null && typeof a === 'object' && !(a instanceof Error) ? maskFields(a) : maskValue(a),
    ) as Parameters<typeof method>;
    return method.apply(this, masked);
  },
};

/**
 * A logger, its lines' secrets masked; level from ROTA_LOG_LEVEL (default info). `destination`:
 * where its lines go (default stdout).
 */
export function createLogger(opts: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const level = process.env.ROTA_LOG_LEVEL ?? 'info';
  opts = { hooks, ...opts };
  if (destination) return pino({ level, ...opts }, destination);
  if (process.stdout.isTTY && prettyAvailable()) {
    return pino({ level, ...opts, transport: { target: 'pino-pretty', options: { colorize: true } } });
  }
  return pino({ level, ...opts });
}

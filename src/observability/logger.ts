/** Logs: pino, JSON by default, pretty when stdout is a terminal and pino-pretty is installed. */
import { createRequire } from 'node:module';
import { type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger };

function prettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/** A logger; level from ROTA_LOG_LEVEL (default info). */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = process.env.ROTA_LOG_LEVEL ?? 'info';
  if (process.stdout.isTTY && prettyAvailable()) {
    return pino({ level, ...opts, transport: { target: 'pino-pretty', options: { colorize: true } } });
  }
  return pino({ level, ...opts });
}

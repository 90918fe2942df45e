/** Option parsers for durations and rates (`30s`, `PT15M`, `10/1s`). */
import { InvalidArgumentError } from 'commander';
import { TimerSyntaxError } from '../../errors.js';
import { looksLikeIsoDuration, parseHumanDuration, parseIsoDuration } from '../../timers/duration.js';

/** The ms of a duration `text` (`30s`, `2h30m`, `PT15M`), or an InvalidArgumentError naming option `name`. */
function durationMs(name: string, text: string): number {
  try {
    return looksLikeIsoDuration(text) ? parseIsoDuration(text, text, 0) : parseHumanDuration(text, text, 0);
  } catch (err) {
    if (err instanceof TimerSyntaxError) throw new InvalidArgumentError(`${name}: ${err.message}`);
    throw err;
  }
}

/** Parses a duration option (`30s`, `5m`, `PT1H`) as ms. */
export function durationOption(name: string) {
  return (value: string): number => durationMs(name, value);
}

/**
 * Parses a rate option, `max/per` (`10/1s`, `600/1h`), or `none` (lift the rate; kept as the
 * string: commander turns a parsed null into '').
 */
export function rateOption(name: string) {
  return (value: string): { max: number; perMs: number } | 'none' => {
    if (value === 'none') return 'none';
    const m = /^(\d+)\/(.+)$/.exec(value);
    if (!m) throw new InvalidArgumentError(`${name} must be max/per, such as 10/1s or 600/1h, or none`);
    return { max: Number(m[1]), perMs: durationMs(name, m[2]) };
  };
}

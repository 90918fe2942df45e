/**
 * `rota calendar [--from ISO] [--iterations N] [--tz ZONE] [--json] SPEC...`:
 * shows how timer specs are read and when they elapse next, like
 * `systemd-analyze calendar`. Accepts every timer kind parseTimer knows.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { parseTimer, type Timer, TimerSyntaxError } from '../../timers/index.js';
import { isValidTimeZone } from '../../timers/zone.js';
import { EXIT_INVALID } from '../exit-codes.js';
import { printMessage } from '../secrets.js';
import { zonedIso } from '../times.js';

interface CalendarOptions {
  from?: Date;
  iterations: number;
  tz?: string;
  json?: boolean;
}

function parseFrom(value: string): Date {
  const d = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(d.getTime())) {
    throw new InvalidArgumentError('expected an ISO-8601 date-time, e.g. 2026-03-28T12:00:00Z');
  }
  return d;
}

function parseIterations(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 100_000) throw new InvalidArgumentError('expected a whole number from 1 to 100000');
  return n;
}

function parseZone(value: string): string {
  if (value !== 'UTC' && !isValidTimeZone(value))
    throw new InvalidArgumentError('expected an IANA time zone such as Europe/Paris');
  return value;
}

/** The next `n` elapses of `timer` strictly after `from`. */
export function elapses(timer: Timer, from: Date, n: number): Date[] {
  const out: Date[] = [];
  let at: Date | null = from;
  for (let i = 0; i < n && at; i++) {
    at = timer.next(at);
    if (at) out.push(at);
  }
  return out;
}

/** Prints one spec; its elapses in `zone` (UTC when absent). */
function printText(spec: string, timer: Timer, next: Date[], first: boolean, zone: string | undefined): void {
  const lines = first ? [] : [''];
  lines.push(`  Original form: ${spec}`, `           Kind: ${timer.kind}`, `Normalized form: ${timer.normalized}`);
  if (timer.timezone !== undefined) lines.push(`      Time zone: ${timer.timezone}`);
  if (next.length === 0) lines.push('    Next elapse: never');
  next.forEach((d, i) => {
    lines.push(`${i === 0 ? '    Next elapse' : `       Iter. #${i + 1}`}: ${zonedIso(d.getTime(), zone)}`);
  });
  process.stdout.write(lines.join('\n') + '\n');
}

/** Registers the `calendar` command on `program`. */
export function register(program: Command): void {
  program
    .command('calendar')
    .description('show the normalized form and next elapses of timer specs (calendar events, cron, intervals, due dates)')
    .argument('<spec...>', 'timer specs; quote each one')
    .option('--from <iso>', 'compute elapses after this instant (default: now)', parseFrom)
    .option('--iterations <n>', 'how many elapses to show', parseIterations, 1)
    .option('--tz <zone>', 'time zone for specs that name none, and to print elapses in (default: UTC)', parseZone)
    .option('--json', 'print one JSON object per line (elapses in UTC)')
    .action((specs: string[], opts: CalendarOptions, cmd: Command) => {
      const utc = Boolean(cmd.optsWithGlobals().utc);
      const from = opts.from ?? new Date();
      let invalid = false;
      let printed = 0;
      specs.forEach((spec) => {
        let timer: Timer;
        try {
          timer = parseTimer(spec, { timezone: opts.tz });
        } catch (err) {
          if (!(err instanceof TimerSyntaxError)) throw err;
          invalid = true;
          // (errors go to stderr, prefixed as every command's; --json also gives the spec's line)
          if (opts.json) process.stdout.write(JSON.stringify({ spec, error: err.message }) + '\n');
          printMessage(`failed to parse ${JSON.stringify(spec)}: ${err.message}`);
          return;
        }
        const next = elapses(timer, from, opts.iterations);
        if (opts.json) {
          process.stdout.write(
            JSON.stringify({ spec, kind: timer.kind, normalized: timer.normalized, next: next.map((d) => d.toISOString()) }) +
              '\n',
          );
        } else printText(spec, timer, next, printed++ === 0, utc ? undefined : (timer.timezone ?? opts.tz));
      });
      if (invalid) process.exitCode = EXIT_INVALID;
    });
}

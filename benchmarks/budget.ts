/**
 * The performance budget: instructions Redis executes per job in the hot-path scripts (submit,
 * take, finish, and a drain as one executor of 100 slots sends its calls), counted by callgrind
 * (probes/instructions.ts --scripts-only --fixed-drain), against the baseline in budget.json. A
 * figure more than 3 % above its baseline fails. The counts do not move with machine load.
 *
 * Usage: npm run budget                                  check (exit 1 when over budget)
 *        npm run budget -- --update --reason "why"       write the figures that moved to budget.json
 * Needs valgrind, and the redis-server the baseline was measured with.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A rise above this share of the baseline fails. */
const LIMIT = 0.03;
/**
 * Below this share a figure is the same as its baseline: the spread between runs (0.15 % at
 * most, from the random job ids and skiplist levels), and `--update` leaves it as it is.
 */
const NOISE = 0.005;
/** The probe's figures by the names the budget gives them. */
const NAMES: Record<string, string> = { submit: 'submit', take: 'take', finish: 'finish', drain: 'drain-c100' };

const BUDGET_FILE = fileURLToPath(new URL('./budget.json', import.meta.url));
const PROBE = fileURLToPath(new URL('./probes/instructions.ts', import.meta.url));

/** One figure of the baseline: instructions per job, and why it last changed. */
interface Figure {
  instructions: number;
  reason: string;
  date: string;
}

/** budget.json: what the figures were measured on and with, and the figures. */
interface Budget {
  /** `redis-server --version` of the server measured: another build executes other instructions. */
  server: string;
  /** The probe's options (sizes). */
  probe: string[];
  figures: Record<string, Figure>;
}

/** The value of `--name`, or undefined. */
function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

/** Stops with `message` and exit code 2 (the check could not run). */
function refuse(message: string): never {
  console.error(`budget: ${message}`);
  process.exit(2);
}

/** Runs the probe: instructions per job of each figure. */
function measure(probe: string[]): Record<string, number> {
  const out = execFileSync(process.execPath, ['--import', 'tsx', PROBE, ...probe, '--scripts-only', '--fixed-drain', '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const raw = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Record<string, number>;
  const figures: Record<string, number> = {};
  for (const [key, name] of Object.entries(NAMES)) if (raw[key] !== undefined) figures[name] = raw[key];
  return figures;
}

const share = (n: number) => `${n >= 0 ? '+' : ''}${(100 * n).toFixed(2)} %`;
const count = (n: number) => n.toLocaleString('en-US');

const update = process.argv.includes('--update');
const reason = option('reason');
if (update && !reason) refuse('--update needs --reason "what changed and why"');
try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  refuse('valgrind is not installed (Debian package valgrind)');
}
const budget = JSON.parse(readFileSync(BUDGET_FILE, 'utf8')) as Budget;
const server = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim();
if (server !== budget.server && !update) {
  refuse(
    `the baseline was measured on "${budget.server}", this redis-server is "${server}"; ` +
      'its counts are not comparable: measure a baseline with --update on the server CI runs',
  );
}

const started = Date.now();
const measured = measure(budget.probe);
const seconds = ((Date.now() - started) / 1000).toFixed(0);
const over: string[] = [];
const fell: string[] = [];
console.log(`instructions per job (callgrind, scripts only; ${budget.probe.join(' ')}), ${seconds} s:`);
for (const name of Object.values(NAMES)) {
  const now = measured[name];
  const base = budget.figures[name]?.instructions;
  if (now === undefined) refuse(`the probe gave no figure for ${name}`);
  if (base === undefined) {
    console.log(`  ${name}: ${count(now)} (no baseline)`);
    if (!update) over.push(`${name}: no baseline; add one with --update`);
    continue;
  }
  const rise = now / base - 1;
  console.log(`  ${name}: ${count(now)}, baseline ${count(base)} (${share(rise)})`);
  if (rise > LIMIT) {
    over.push(
      `${name} rose ${share(rise)} over budget: baseline ${count(base)}, measured ${count(now)} instructions per job ` +
        `(limit ${share(LIMIT)}; baseline's reason: ${budget.figures[name].reason})`,
    );
  } else if (rise < -LIMIT) fell.push(name);
}
// (a fall left in the baseline would let a later change rise by as much unnoticed)
if (fell.length > 0 && !update) {
  console.log(`budget: ${fell.join(', ')} fell by more than ${share(LIMIT)}: record it with --update --reason "..."`);
}

if (update) {
  const date = new Date().toISOString().slice(0, 10);
  const changed: string[] = [];
  for (const [name, now] of Object.entries(measured)) {
    const base = budget.figures[name]?.instructions;
    if (base !== undefined && Math.abs(now / base - 1) < NOISE && server === budget.server) continue;
    budget.figures[name] = { instructions: now, reason: reason as string, date };
    changed.push(name);
  }
  budget.server = server;
  writeFileSync(BUDGET_FILE, `${JSON.stringify(budget, null, 2)}\n`);
  console.log(
    changed.length > 0
      ? `budget.json: ${changed.join(', ')} written (commit it with the change)`
      : `budget.json: no figure moved by ${share(NOISE)} or more; nothing written`,
  );
} else if (over.length > 0) {
  for (const line of over) console.error(`budget: ${line}`);
  console.error('budget: a rise that is accepted is written with npm run budget -- --update --reason "..."');
  process.exit(1);
} else {
  console.log(`budget: every figure within ${share(LIMIT)} of its baseline`);
}

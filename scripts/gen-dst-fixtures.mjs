#!/usr/bin/env node
/**
 * Regenerates test/fixtures/calendar/dst.json: the elapses systemd-analyze (Debian's systemd 252)
 * gives around every UTC-offset change of 2026 and 2027 in zones whose changes are unusual (30
 * minutes, at midnight, at 02:45, of two hours) and in a few ordinary ones, for sub-hour steps,
 * stepped hour ranges, hourly and daily specs.
 *
 *   node --import tsx scripts/gen-dst-fixtures.mjs [path/to/systemd-analyze]
 *
 * $TZ maps to parseTimer's `timezone` option. Tests read only the JSON file.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { offsetChanges } from '../test/helpers/calendar.ts';

const analyze = process.argv[2] ?? 'systemd-analyze';
const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures', 'calendar', 'dst.json');

export const ZONES = [
  'Australia/Lord_Howe', // 30-minute change at 02:00
  'America/Santiago', // at midnight
  'Pacific/Easter', // at midnight (22:00 local)
  'America/Havana', // at midnight / 01:00
  'Africa/Cairo', // at midnight
  'Asia/Beirut', // at midnight
  'Pacific/Chatham', // at 02:45 / 03:45
  'Antarctica/Troll', // two hours
  'America/Nuuk', // Saturday 22:00 / 23:00 local
  'Asia/Gaza', // Saturday 02:00
  'Europe/Paris',
  'America/New_York',
  'Australia/Sydney',
  'Pacific/Auckland',
  'Asia/Jerusalem',
];
/** Spec and how many elapses to record from each base time. */
const SPECS = [
  ['*:0/15', 16],
  ['*:0/20', 12],
  ['*:0/45', 8],
  ['*:05/20', 12],
  ['*-*-* 00..03:00/20', 14],
  ['*-*-* 00/2:30', 6],
  ['hourly', 8],
  ['daily', 3],
  ['*-*-* 02:30', 3],
];

/** Instants (ms, on the minute) at which `zone`'s offset changes during 2026 and 2027. */
export const changes = (zone) => offsetChanges(zone, Date.UTC(2026, 0, 1), Date.UTC(2028, 0, 1));

export const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** systemd-analyze's next `n` elapses after `baseMs`, and whether it gave up ("Infinite loop"). */
export function run(tz, spec, baseMs, n) {
  const r = spawnSync(analyze, ['calendar', `--base-time=@${baseMs / 1000}`, `--iterations=${n}`, '--', spec], {
    encoding: 'utf8',
    env: { ...process.env, TZ: tz, LC_ALL: 'C' },
  });
  const stuck = /Infinite loop in calendar calculation/.test(r.stderr);
  if (r.status !== 0 && !stuck) throw new Error(`${spec} ${tz}: ${r.stderr}`);
  const normalized = /Normalized form: (.*)/.exec(r.stdout)?.[1];
  const next = [...r.stdout.matchAll(/\(in UTC\): \w+ (\S+) (\S+) UTC/g)].map((m) => Date.parse(`${m[1]}T${m[2]}Z`));
  return { normalized, next, stuck };
}

/** Minutes after a stuck start that Rota starts again from (src/timers/calendar-next.ts). */
const RETRY_MINUTES = [1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095];

/**
 * `n` elapses after `baseMs`. Where systemd gets stuck, the next one is systemd's answer from the
 * first retry start where it is not, as Rota does; `stuck` lists the starts where it got stuck.
 */
export function chain(tz, spec, baseMs, n) {
  const next = [];
  const stuckAfter = [];
  let normalized;
  let from = baseMs;
  while (next.length < n) {
    const r = run(tz, spec, from, n - next.length);
    normalized ??= r.normalized;
    next.push(...r.next);
    if (!r.stuck) break;
    const at = next.length ? next[next.length - 1] : from;
    stuckAfter.push(iso(at));
    const retry = RETRY_MINUTES.map((m) => run(tz, spec, at + m * 60_000, 1)).find((x) => !x.stuck);
    if (!retry || retry.next.length === 0) break;
    normalized ??= retry.normalized;
    next.push(retry.next[0]);
    from = retry.next[0];
  }
  return { normalized, next: next.map(iso), stuckAfter };
}

/** The systemd version the fixtures are recorded from. */
export function reference() {
  return spawnSync(analyze, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
}

/** Writes dst.json; only when run as a script (gen-faketime-fixtures.mjs imports `chain`). */
function main() {
  const cases = [];
  for (const tz of ZONES) {
    for (const change of changes(tz)) {
      for (const [spec, iterations] of SPECS) {
        // Sub-day specs start two hours before the change; daily ones and hour ranges a day before.
        const lead = iterations <= 3 || spec.startsWith('*-*-* 00..') ? 86_400_000 + 3_600_000 : 2 * 3_600_000;
        const base = change - lead;
        const { normalized, next, stuckAfter } = chain(tz, spec, base, iterations);
        cases.push({
          spec,
          tz,
          change: iso(change),
          base: iso(base),
          normalized,
          next,
          ...(stuckAfter.length ? { stuckAfter } : {}),
        });
      }
    }
  }
  const version = reference();
  writeFileSync(
    out,
    `{"generator":"scripts/gen-dst-fixtures.mjs","reference":${JSON.stringify(version)},"cases":[\n${cases.map((c) => JSON.stringify(c)).join(',\n')}\n]}\n`,
  );
  console.log(`${cases.length} cases written to ${out}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();

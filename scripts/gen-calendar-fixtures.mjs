#!/usr/bin/env node
/**
 * Regenerates test/fixtures/calendar/*.json by asking systemd-analyze (the
 * reference implementation, Debian's systemd 252) for the normalized form and
 * the next elapses of every spec below, for several base times and $TZ zones.
 *
 *   node scripts/gen-calendar-fixtures.mjs [path/to/systemd-analyze]
 *
 * $TZ maps to parseTimer's `timezone` option. Tests read only the JSON files.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const analyze = process.argv[2] ?? 'systemd-analyze';
const outDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures', 'calendar');
const ITERATIONS = 6;

/** Specs; whether systemd accepts each one is decided by systemd itself. */
const SPECS = [
  // shorthands
  'minutely',
  'hourly',
  'daily',
  'weekly',
  'monthly',
  'yearly',
  'annually',
  'anually',
  'quarterly',
  'semiannually',
  'semi-annually',
  'biannually',
  'bi-annually',
  'DAILY',
  'Hourly',
  'daily Europe/Paris',
  'weekly UTC',
  'monthly America/New_York',
  'hourly Australia/Lord_Howe',
  'quarterly Asia/Kolkata',
  'yearly utc',
  // weekdays
  'Mon',
  'Monday',
  'Mon..Fri',
  'Sat,Sun',
  'Mon-Wed',
  'mon,wed,fri 12:00',
  'Tue..Thu 08:30',
  'Mon,Tue,Wed',
  'Mon..Sun',
  'Fri,Mon',
  'Wed..Fri,Mon',
  'Mon, 12:00',
  'Sat,Sun 10:00',
  'Friday *-*-13',
  'Mon *-*-1..7 06:00',
  'Sun *-*~1..7',
  'Mon  12:00',
  'SUNDAY 23:00',
  'Tue,Thu..Sat 18:00:30',
  'Mon..Fri *-*-* 09:00',
  'Sat,Sun *-*-* 10:00:00',
  'Mon *-*-* 04:00:00',
  'Thu 2026-*-* 18:00',
  'Fri *-*-13 13:13',
  'Mon 2027-02-29',
  'Sat 2040-02-29',
  'Wed 2040-02-29',
  'Mon *-*-* 00/6:00',
  'Mon..Fri 09:00 Europe/Paris',
  'Sat *-*~1',
  'Mon,Fri *-1,7-1..7 12:00',
  // dates
  '*-*-*',
  '*-*-01',
  '*-01-01',
  '2027-*-*',
  '*-02-29',
  '*-02-29 12:00',
  '*-*-31',
  '*-*-30,31',
  '*-02-30',
  '*-04-31',
  '2028-02-29',
  '*-1,4,7,10-1',
  '*-*-1/7',
  '*-*-2..20/3',
  '*-6..8-*',
  '2030..2032-01-01',
  '2030..2032-*-15 12:00',
  '2026/2-01-01',
  '26-12-25',
  '99-01-01',
  '2020-01-01',
  '2199-12-31 23:59:59',
  '*-12-31 23:59:59.999999',
  '12-25',
  '02-29',
  '*-*-* ',
  '*-*-*  12:00',
  '2026..2199/50-06-15',
  '1970-01-01',
  '*-03-29,30 02:30',
  '*-10-25 02:30',
  '*-11-01 01:30',
  '2026-03-08 02:30',
  '*-*-1,15,28..31',
  '*-2/3-1',
  '2027,2029-*-1',
  '*-*-05..10/2',
  // end of month
  '*-*~1',
  '*-*~01',
  '*-02~3..1',
  '*-02~1..3',
  '*-02~3',
  '*-*~7/2',
  '*-*~1,15',
  '*-*~28',
  '*-*~29',
  '*-02~1 12:00',
  '*-*~1 23:59:59',
  '*-*~1..3',
  '2028-02~1',
  '*-*~*',
  '*-12~31',
  '*-*~5/2 06:00',
  // times
  '12:00',
  '*:0/15',
  '*:00',
  '*:*',
  '*:*:*',
  '*:*:0/10',
  '00/2:00',
  '*-*-* 00/2:00',
  '08..18:00',
  '08..18/2:30',
  '9..17:0/20',
  '*:05,35',
  '23:59:59',
  '00:00:00',
  '12:00:30.5',
  '*:*:0/0.5',
  '*:*:1.25/2.5',
  '*:*:59.999999',
  '*:*:0.0000005',
  '*:*:00..30/7.5',
  '*:*:10..20',
  '*:0..59/7',
  '0,12:00',
  '6,18:30:15',
  '2:30',
  '02:30',
  '01:30',
  '03:00',
  '02:00',
  '02:15',
  '01:45',
  '00:00',
  '1/3:00',
  '*:59:59',
  '*:*:0/1',
  '*:*:30/1',
  '*:*:1..59/2',
  '*:*:0.5',
  '00:00:00.000001',
  '0..23/23:0..59/59',
  '*:*:0/0.25',
  '12:*:*',
  '*:30',
  '23:30:00.5',
  // timestamps
  '@1700000000',
  '@2000000000',
  '@0',
  '@1774699200',
  '@1774699201',
  '@ 2000000000',
  '@+2000000000',
  // zones
  '*-*-* 02:30 Europe/Paris',
  '*-*-* 01:30 America/New_York',
  '*-*-* 02:30 America/New_York',
  '*-*-* 02:15 Australia/Lord_Howe',
  '*-*-* 01:45 Australia/Lord_Howe',
  '*:0/30 Europe/Paris',
  '*:0/30 America/New_York',
  '*:0/15 Australia/Lord_Howe',
  '*-*-* 12:00 Asia/Kolkata',
  'daily Asia/Kolkata',
  '*-*-* 00:00 UTC',
  '*-*-* 00:00 utc',
  'Mon 09:00 Etc/GMT+5',
  '*-*~1 Europe/Paris',
  '*-*-* 02:30 Etc/UTC',
  '*:*:0/20 Australia/Lord_Howe',
  '*-*-* 02:00 Europe/Paris',
  '*-*-* 03:00 Europe/Paris',
  '*-*-* 02:59:59 Europe/Paris',
  '*:30 Europe/Paris',
  '*:30 America/New_York',
  '2026-10-25 02:30 Europe/Paris',
  '2026-11-01 01:30:00 America/New_York',
  '*-*-* 00:00 Asia/Tokyo',
  'Sun *-*-* 02:30 Europe/Paris',
  '*-*-* 02:30 Europe/London',
  '*-*-* 01:30 Europe/London',
  '*-*-* 00:00 America/Sao_Paulo',
  '*-*-* 12:00 Pacific/Auckland',
  '*-*-* 02:30 Pacific/Auckland',
  // rejected by systemd
  'bogus',
  '',
  ' ',
  'Mon..',
  'Mon,,Tue',
  'Mon..Wed..Fri',
  'Sun..Mon',
  'Mond',
  '*/2:00',
  '*:*:5.',
  '25:00',
  '12:60',
  '12:00:60',
  '*-13-01',
  '*-00-01',
  '*-*-32',
  '*-*-0',
  '1969-01-01',
  '2200-01-01',
  '*-02~03..01',
  '*:0/0',
  '*:0/60',
  '12',
  '12:',
  ':00',
  '12:00:00:00',
  '*-*-* 12:00 Nowhere/City',
  '*-*-* 12:00 europe/paris',
  'daily UTCX',
  '@',
  '@abc',
  '@1700000000 12:00',
  '**',
  '*-*-*-*',
  '1..2..3:00',
  'Mon Tue',
  '12:00 Mon',
  '*-*-* 12.5:00',
  '*:*:1/0.0000001',
  '10..5:00',
  '*:*:0..0',
  '00..00:00',
  '*-*-* 24:00',
  '-1:00',
  '+1:00',
  '1,:00',
  ',1:00',
  '1,,2:00',
  'Mon-',
  'Mon,',
  'mon..fri,',
  '*-*~*~1',
  '2026-02~3-1',
  '*~1',
  '~1',
  '*:*:*.5',
  '9999999999999:00',
  '*-*-* 00:00 UTC UTC',
  'Mon..Fri 9:00 Europe/Paris x',
  'hourly daily',
  'weekly Mon',
  ' daily',
  'daily ',
  '12:00 ',
  'Mon..Fri/2',
  '*-*-*/2',
  '*:*:60',
  '2026-02-30T00:00',
  'every 5m',
  '0 12 * * *x',
  '*-*-1..',
  '1..:00',
  '*:*:0/60',
  '@99999999999',
  '*-*-* 12:00 +01:00',
];

/** Seeded pseudo-random specs (mulberry32), so regenerating gives the same set. */
function randomSpecs(count, seed) {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pad = (n) => String(n).padStart(2, '0');
  const field = (lo, hi) => {
    const r = rnd();
    if (r < 0.35) return '*';
    if (r < 0.6) return pad(int(lo, hi));
    if (r < 0.75) return `${pad(int(lo, hi))},${pad(int(lo, hi))}`;
    if (r < 0.9) {
      const x = int(lo, hi);
      return `${pad(x)}..${pad(int(x, hi))}`;
    }
    return `${pad(int(lo, hi))}/${int(1, Math.max(1, Math.floor((hi - lo) / 2)))}`;
  };
  const days = ['', '', '', 'Mon ', 'Sat,Sun ', 'Mon..Fri ', 'Tue,Thu ', 'Sun '];
  const zones = ['', '', '', ' UTC', ' Europe/Paris', ' America/New_York', ' Australia/Lord_Howe'];
  const out = [];
  for (let i = 0; i < count; i++) {
    const eom = rnd() < 0.15;
    const date = `${rnd() < 0.8 ? '*' : field(2026, 2031)}-${field(1, 12)}${eom ? '~' : '-'}${eom ? field(1, 7) : field(1, 31)}`;
    const secs = rnd() < 0.5 ? '' : `:${field(0, 59)}`;
    out.push(`${days[int(0, days.length - 1)]}${date} ${field(0, 23)}:${field(0, 59)}${secs}${zones[int(0, zones.length - 1)]}`);
  }
  return out;
}
SPECS.push(...randomSpecs(80, 20260328));

const BASES_BY_ZONE = {
  UTC: ['2026-03-28T12:00:00Z', '2028-02-28T12:00:00Z', '2030-12-31T23:59:30Z'],
  'Europe/Paris': ['2026-03-28T12:00:00Z', '2026-10-24T12:00:00Z', '2028-02-28T12:00:00Z'],
  'America/New_York': ['2026-03-07T12:00:00Z', '2026-10-31T12:00:00Z', '2028-02-28T12:00:00Z'],
  'Australia/Lord_Howe': ['2026-04-04T00:00:00Z', '2026-10-03T00:00:00Z'],
  'Asia/Kolkata': ['2026-03-28T12:00:00Z'],
};

function toIso(line) {
  // "Sat 2026-03-28 13:00:00 UTC"
  const m = /(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) UTC$/.exec(line.trim());
  if (!m) throw new Error(`cannot read elapse line: ${line}`);
  return `${m[1]}T${m[2]}Z`;
}

function run(spec, tz, base) {
  const baseSec = Date.parse(base) / 1000;
  const r = spawnSync(analyze, ['calendar', `--base-time=@${baseSec}`, `--iterations=${ITERATIONS}`, '--', spec], {
    env: { ...process.env, TZ: tz, SYSTEMD_COLORS: '0', LC_ALL: 'C' },
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  const lines = r.stdout.split('\n');
  const normalizedLine = lines.find((l) => l.trimStart().startsWith('Normalized form:'));
  if (r.status !== 0 || !normalizedLine) {
    const failed = r.stderr.split('\n').find((l) => l.startsWith('Failed to parse'));
    return { error: failed ? failed.replace(/^.*': /, '') : r.stderr.trim() || 'rejected' };
  }
  const normalized = normalizedLine.replace(/^\s*Normalized form: /, '');
  const next = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*(Next elapse|Iter\. #\d+): (.*)$/.exec(lines[i]);
    if (!m) continue;
    if (m[2] === 'never') break;
    const utcLine = /^\s*\(in UTC\): (.*)$/.exec(lines[i + 1] ?? '');
    next.push(toIso(utcLine ? utcLine[1] : m[2]));
  }
  return { normalized, next };
}

const version = spawnSync(analyze, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
const accepted = [];
const rejected = [];
for (const spec of [...new Set(SPECS)]) {
  let bad = null;
  for (const [tz, bases] of Object.entries(BASES_BY_ZONE)) {
    for (const base of bases) {
      const res = run(spec, tz, base);
      if ('error' in res) {
        bad ??= { spec, tz, error: res.error };
        continue;
      }
      accepted.push({ spec, tz, base, normalized: res.normalized, next: res.next });
    }
  }
  if (bad) rejected.push(bad);
}
mkdirSync(outDir, { recursive: true });
const header = { generator: 'scripts/gen-calendar-fixtures.mjs', reference: version, iterations: ITERATIONS };
writeFileSync(
  join(outDir, 'accepted.json'),
  JSON.stringify({ ...header, cases: accepted }, null, 0).replace(/\},\{/g, '},\n{') + '\n',
);
writeFileSync(
  join(outDir, 'rejected.json'),
  JSON.stringify({ ...header, cases: rejected }, null, 0).replace(/\},\{/g, '},\n{') + '\n',
);
const specsAccepted = new Set(accepted.map((c) => c.spec)).size;
console.log(`${version}: ${accepted.length} accepted cases over ${specsAccepted} specs, ${rejected.length} rejected specs`);

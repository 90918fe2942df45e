#!/usr/bin/env node
/**
 * Regenerates test/fixtures/calendar/fast-clock.json: the tasks of the fast-clock scheduler test
 * (test/periodic/fast-clock.test.ts) and systemd-analyze's elapses for each of them over two
 * windows: the night of 3-4 October 2026 when Lord Howe (30 minutes, 15:30Z) and Sydney (16:00Z)
 * enter daylight saving time, and that of 4-5 April 2026 when Chatham and Auckland (14:00Z),
 * Lord Howe (15:00Z) and Sydney (16:00Z) leave it.
 *
 *   node --import tsx scripts/gen-faketime-fixtures.mjs [path/to/systemd-analyze]
 *
 * A cron rule is recorded from the calendar event it equals (`systemd`). Tests read only the JSON.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chain, changes, iso, reference } from './gen-dst-fixtures.mjs';

const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures', 'calendar', 'fast-clock.json');

/** Per window: its span, and its tasks as id, timer, timezone, and the calendar event systemd-analyze is asked for. */
const WINDOWS = [
  {
    name: 'spring-forward',
    from: '2026-10-03T14:30:00Z',
    to: '2026-10-03T17:00:00Z',
    tasks: [
      ['lordhowe-20min', '*:0/20', 'Australia/Lord_Howe'],
      ['lordhowe-45min', '*:0/45', 'Australia/Lord_Howe'],
      // Hour `*` follows the clock: the skipped half hour does not run.
      ['lordhowe-cron-20min', '*/20 * * * *', 'Australia/Lord_Howe', '*:0/20'],
      ['lordhowe-cron-hourly', '0 * * * *', 'Australia/Lord_Howe', '*-*-* *:00:00'],
      ['sydney-15min', '*:0/15', 'Australia/Sydney'],
      ['paris-05-20', '*:05/20', 'Europe/Paris'],
    ],
  },
  {
    name: 'fall-back',
    from: '2026-04-04T13:30:00Z',
    to: '2026-04-04T16:30:00Z',
    tasks: [
      ['lordhowe-20min', '*:0/20', 'Australia/Lord_Howe'],
      ['lordhowe-45min', '*:0/45', 'Australia/Lord_Howe'],
      // Hour `*` follows the clock; no whole local hour repeats at Lord Howe's 30-minute change.
      ['lordhowe-cron-hourly', '0 * * * *', 'Australia/Lord_Howe', '*-*-* *:00:00'],
      ['chatham-15min', '*:0/15', 'Pacific/Chatham'],
      ['auckland-night-range', '*-*-* 00..03:00/20', 'Pacific/Auckland'],
      ['sydney-30min', '*:0/30', 'Australia/Sydney'],
      ['paris-05-20', '*:05/20', 'Europe/Paris'],
    ],
  },
];

const windows = WINDOWS.map((w) => {
  const from = Date.parse(w.from);
  const to = Date.parse(w.to);
  const tasks = w.tasks.map(([id, timer, timezone, systemd = timer]) => ({
    id,
    timer,
    timezone,
    systemd,
    next: chain(timezone, systemd, from, 60).next.filter((t) => Date.parse(t) <= to),
  }));
  const zoneChanges = [...new Set(w.tasks.map((t) => t[2]))].flatMap((tz) =>
    changes(tz)
      .filter((c) => c > from && c < to)
      .map((c) => ({ tz, at: iso(c) })),
  );
  return { name: w.name, from: w.from, to: w.to, changes: zoneChanges, tasks };
});
const head = JSON.stringify({ generator: 'scripts/gen-faketime-fixtures.mjs', reference: reference() }).slice(0, -1);
const windowJson = (w) => {
  const { tasks, ...rest } = w;
  return `${JSON.stringify(rest).slice(0, -1)},"tasks":[\n${tasks.map((t) => JSON.stringify(t)).join(',\n')}\n]}`;
};
writeFileSync(out, `${head},"windows":[\n${windows.map(windowJson).join(',\n')}\n]}\n`);
console.log(`${windows.length} windows written to ${out}`);

/**
 * End to end through DST changes: scheduler replicas and their Redis servers on a clock that runs
 * 240 times as fast (libfaketime), through the night when Lord Howe (a 30-minute change) and
 * Sydney enter daylight saving time, and the one when Chatham, Auckland, Lord Howe and Sydney
 * leave it. Each task's submitted occurrences are systemd-analyze's, recorded by
 * scripts/gen-faketime-fixtures.mjs.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { PeriodicTasks } from '../../src/index.js';
import { fakeClockMissing, fakeClockNodeEnv, fakeClockRedisEnv } from '../helpers/faketime.js';
import { NodeProcess } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { uniqueQueue } from '../helpers/setup.js';
import { sleep } from '../helpers/wait.js';

interface FixtureWindow {
  name: string;
  /** Elapses are recorded after `from`, up to `to`. */
  from: string;
  to: string;
  changes: Array<{ tz: string; at: string }>;
  tasks: Array<{
    id: string;
    timer: string;
    timezone: string;
    /** The calendar event systemd-analyze was asked for (a cron rule's equivalent). */
    systemd: string;
    next: string[];
  }>;
}
const fixture = JSON.parse(readFileSync(new URL('../fixtures/calendar/fast-clock.json', import.meta.url), 'utf8')) as {
  windows: FixtureWindow[];
};

const CHILD = new URL('../fixtures/fast-clock-replica.ts', import.meta.url).pathname;
const SPEED = 240;
/** Per window: where the servers' clock starts, and the last occurrence checked (the run stops once past it). */
const RUNS: Record<string, { start: string; until: string }> = {
  'spring-forward': { start: '2026-10-03T14:55:00Z', until: '2026-10-03T16:25:00Z' }, // 1h30 in 23 s
  'fall-back': { start: '2026-04-04T13:45:00Z', until: '2026-04-04T16:05:00Z' }, // 2h20 in 35 s
};
const missing = fakeClockMissing();
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanup.splice(0)) await c();
});

/**
 * Runs one replica on a fast clock through `w`; resolves a line per task whose occurrences differ
 * from systemd's, and one if the replica failed or did not stop.
 */
async function run(w: FixtureWindow): Promise<string[]> {
  const clock = { start: new Date(RUNS[w.name].start), speed: SPEED };
  const until = Date.parse(RUNS[w.name].until);
  // The replica runs on the same speed-up, so its sleeps last as long as the server's clock says.
  // It loads first: its start-up would cost minutes of the fast clock.
  const child = new NodeProcess(CHILD, [], fakeClockNodeEnv(clock));
  cleanup.push(() => child.kill());
  await child.waitFor((m) => m.loaded, 60_000);
  const server = await RedisServer.start({ env: fakeClockRedisEnv(clock) });
  cleanup.push(() => server.destroy());
  const admin = new Redis(server.url);
  const serverNow = async () => {
    const [s, us] = await admin.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  const name = uniqueQueue('fastclock');
  // A few real milliseconds late are a minute here: a grace of 10 minutes keeps every occurrence on time.
  child.send({ start: { url: server.url, queue: name, options: { misfireGraceMs: 600_000 } } });
  await child.waitFor((m) => m.ready);
  const from = await serverNow();
  expect(from, 'the run starts before the first change').toBeLessThan(Math.min(...w.changes.map((c) => Date.parse(c.at))));
  const tasks = new PeriodicTasks(name, { connection: server.url, now: () => from });
  for (const t of w.tasks) await tasks.upsert({ id: t.id, task: 'noop', timer: t.timer, timezone: t.timezone, overlap: 'allow' });
  while ((await serverNow()) <= until) await sleep(100);
  child.send({ close: true });
  const failures: string[] = [];
  // (a replica whose planning is stuck never gets to close)
  const exit = await Promise.race([child.exited, sleep(20_000).then(() => 'still running 20 s after close')]);
  if (exit !== 0) failures.push(`replica: exit ${exit}`);
  for (const m of child.received()) if (m.error) failures.push(`replica error: ${m.error}`);
  for (const t of w.tasks) {
    const runs = await tasks.runs(t.id, { limit: 1000 });
    const got = runs.map((r) => r.occurrence).sort((a, b) => a - b);
    // Every elapse systemd gives in the window; none it does not give (after `until` included), none twice, none missed.
    const want = t.next.filter((o) => Date.parse(o) > from && Date.parse(o) <= until);
    const notRuns = runs.filter((r) => !r.jobId).map((r) => `${r.status}@${iso(r.occurrence)}`);
    const gotUntil = got.filter((o) => o <= until).map(iso);
    const extra = got.map(iso).filter((o) => !t.next.includes(o));
    if (gotUntil.join(' ') !== want.join(' ') || extra.length || notRuns.length || new Set(got).size !== got.length)
      failures.push(
        `${t.id} (${t.timer} ${t.timezone}) from ${iso(from)}\n  want ${want.join(' ')}\n  got  ${got.map(iso).join(' ')} ${notRuns.join(' ')}`,
      );
  }
  await tasks.close();
  admin.disconnect();
  return failures;
}

describe.skipIf(missing !== null).concurrent(`a scheduler on a fast clock${missing ? ` (skipped: ${missing})` : ''}`, () => {
  for (const w of fixture.windows) {
    const zones = [...new Set(w.changes.map((c) => c.tz))].join(', ');
    it(`submits each occurrence systemd-analyze gives, once, through the ${w.name} changes of ${zones}`, async () => {
      expect(await run(w)).toEqual([]);
    }, 90_000);
  }
});

/**
 * Redis commands per periodic occurrence, below and past the scheduler's capacity: N tasks every
 * 5 s (`*:*:0/5`, all due in the same second), one scheduler replica and no executor, run for
 * --seconds; INFO commandstats is read around the run (a count, so it does not move with machine
 * load, unlike the timings). Past capacity (N large enough that a replica cannot stage and release
 * N occurrences in 5 s) the cost per occurrence should stay about what it is below.
 * Prints, per command, the calls per submitted occurrence, and the occurrences submitted, missed
 * (catch-up) and due.
 * With --concurrency N, an executor of N slots runs the jobs (its commands are counted too).
 * Usage: npx tsx benchmarks/probes/periodic-overload.ts [--tasks 40000] [--seconds 30] [--replicas 1] [--concurrency 0]
 */
import { PeriodicTasks, Scheduler, Worker } from '../../src/index.js';
import { arg, labRedis } from './lab.js';

const n = arg('tasks', 40_000);
const seconds = arg('seconds', 30);
const replicas = arg('replicas', 1);
/** Executor slots (0: no executor; the jobs stay waiting). */
const concurrency = arg('concurrency', 0);
const lab = await labRedis();
const { url, admin } = lab;

async function commandStats(): Promise<Map<string, { calls: number; usec: number }>> {
  const out = new Map<string, { calls: number; usec: number }>();
  for (const m of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    out.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
}

const tasks = new PeriodicTasks('pover', { connection: url });
for (let i = 0; i < n; i += 1000) {
  await Promise.all(
    Array.from({ length: Math.min(1000, n - i) }, (_, k) =>
      tasks.upsert({ id: `t${i + k}`, task: 'noop', timer: '*:*:0/5', overlap: 'allow' }),
    ),
  );
}
const schedulers = Array.from({ length: replicas }, (_, i) => new Scheduler('pover', { connection: url, id: `s${i}` }));
let submitted = 0;
for (const s of schedulers) {
  s.on('error', () => {});
  s.on('fired', (f) => (submitted += f.submitted));
}
let ran = 0;
const worker = concurrency > 0 ? new Worker('pover', { noop: () => void ran++ }, { connection: url, concurrency }) : null;
const before = await commandStats();
const t0 = Date.now();
await Promise.all(schedulers.map((s) => s.start()));
await new Promise((r) => setTimeout(r, seconds * 1000));
await Promise.all(schedulers.map((s) => s.close()));
await worker?.close();
const after = await commandStats();
const due = n * Math.floor((Date.now() - t0) / 5000);
// missed: the occurrences passed over by catch-up, from the run histories' `~missed@<first>@<count>@<last>` entries
let missed = 0;
for (let i = 0; i < n; i += 1000) {
  const p = admin.pipeline();
  for (let k = i; k < Math.min(n, i + 1000); k++) p.zrange(`{rota:pover}:p:h:t${k}`, 0, -1);
  for (const [, members] of (await p.exec()) ?? []) {
    for (const m of members as string[]) if (m.startsWith('~missed@')) missed += Number(m.split('@')[2]);
  }
}
const rows: Array<[string, number, number]> = [];
let calls = 0;
let usec = 0;
for (const [cmd, a] of after) {
  const b = before.get(cmd) ?? { calls: 0, usec: 0 };
  const c = a.calls - b.calls;
  if (c === 0 || cmd === 'info' || cmd.startsWith('client')) continue;
  rows.push([cmd, c, a.usec - b.usec]);
  if (cmd !== 'fcall' && cmd !== 'evalsha' && cmd !== 'eval') calls += c;
  else usec += a.usec - b.usec;
}
const per = Math.max(1, submitted);
console.log(
  `${n} tasks every 5 s, ${replicas} replica(s), ${seconds} s: ${submitted} occurrences submitted, ${missed} missed, about ${due} due while it ran (plus those due since the definitions, within the misfire grace), ${ran} run`,
);
console.log(
  `commands per submitted occurrence (inside scripts too): ${(calls / per).toFixed(1)}; script µs per submitted occurrence: ${(usec / per).toFixed(1)}`,
);
for (const [cmd, c, u] of rows.sort((x, y) => y[1] - x[1])) {
  console.log(`  ${cmd.padEnd(18)} ${(c / per).toFixed(2).padStart(8)} per occurrence  (${c} calls, ${u} µs)`);
}
await tasks.close();
await lab.close();

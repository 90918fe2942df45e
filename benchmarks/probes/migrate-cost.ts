/**
 * What a migration step costs (rota migrate, src/queue/migrate.ts): a job-field step (each job's
 * group copied into a new field) over a queue of `--jobs` waiting jobs with 100 bytes of args:
 * the step's time, Redis CPU a record, and how long each call holds Redis (INFO commandstats and
 * latencystats: time in Redis, so on a busy machine it counts waits for a core too), per command
 * (the SCAN steps and the batch scripts, FCALL). The step needs no pause: this is the bound on how long
 * one batch stops other clients.
 * Usage: npx tsx benchmarks/probes/migrate-cost.ts [--jobs 1000000] [--groups 1000] [--batch 200]
 */
import { Queue } from '../../src/index.js';
import { type MigrationStep, migrateQueue } from '../../src/queue/migrate.js';
import { SCHEMA_VERSION } from '../../src/redis/wire.js';
import { arg, labRedis, serverCpuUs, submitSpread } from './lab.js';

const jobs = arg('jobs', 1_000_000);
const groups = arg('groups', 1000);
const batch = arg('batch', 200);
const step: MigrationStep = {
  kind: 'job-field',
  from: SCHEMA_VERSION,
  to: SCHEMA_VERSION + 1,
  compat: SCHEMA_VERSION,
  description: "copy each job's group into field g8 (a probe's step)",
  read: 'group',
  write: 'g8',
  move: false,
};
const lab = await labRedis();
const { url, admin } = lab;
const q = new Queue('migrate', { connection: url });
await submitSpread(q, jobs, groups);
await q.close();
console.log(`${jobs} waiting jobs over ${groups} groups, batches of ${batch} keys`);
await admin.config('RESETSTAT');
const cpu0 = await serverCpuUs(admin);
const t0 = performance.now();
let batches = 0;
const onProgress = (p: { batches: number }) => {
  batches = p.batches;
};
const [report] = await migrateQueue(admin, 'migrate', { steps: [step], batch, onProgress });
const s = (performance.now() - t0) / 1000;
const cpu = (await serverCpuUs(admin)) - cpu0;
const rewritten = report.steps[0].rewritten;
console.log(
  `${step.from} -> ${step.to}: ${rewritten} records rewritten in ${s.toFixed(1)} s (${Math.round(rewritten / s)}/s), Redis CPU ${(cpu / rewritten).toFixed(1)} µs a record, ${batches} batches`,
);
// (per command: calls and time in Redis from commandstats, percentiles from latencystats)
const stats = `${await admin.info('commandstats')}\n${await admin.info('latencystats')}`;
for (const command of ['fcall', 'scan']) {
  const c = new RegExp(`^cmdstat_${command}:calls=(\\d+),usec=(\\d+)`, 'm').exec(stats);
  const l = new RegExp(`^latency_percentiles_usec_${command}:(.*)$`, 'm').exec(stats);
  if (c)
    console.log(
      `  ${command.padEnd(6)} ${c[1].padStart(6)} calls, ${(Number(c[2]) / Number(c[1])).toFixed(0)} µs each; µs ${l?.[1].trim() ?? ''}`,
    );
}
await lab.close();

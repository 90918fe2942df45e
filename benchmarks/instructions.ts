/**
 * Instructions Redis executes per job in each hot-path phase, counted by valgrind's callgrind:
 * the same count on every run and machine load, where CPU time on a shared 2-core machine moves
 * by a factor of two from one minute to the next. For comparing two versions of the scripts.
 *
 * Phases: bulk submit (batches of --submit-batch over --groups groups), take (--batch jobs per
 * call), finish (--batch runs per call, each with its start folded in, as executors send quick
 * runs), then --single one-job submits one after another (the cost of a call, not of a job).
 *
 * Usage: node dist/benchmarks/instructions.js [--jobs 5000] [--groups 1000] [--batch 25]
 *          [--submit-batch 1000] [--single 500] [--redis-server PATH] [--keep]
 * Needs valgrind (callgrind_control). A redis-server built with symbols (see README) lets
 * `callgrind_annotate <dir>/cg.out.N` name the functions; --keep keeps that directory.
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { freePort } from '../src/dev/redis-server.js';
import { queueKeys } from '../src/redis/keys.js';
import { arg, finishAll, PROBE_ARGS, submitSpread, takeAll } from './lab.js';

const jobs = arg('jobs', 5000);
const groups = arg('groups', 1000);
const batch = arg('batch', 25);
const submitBatch = arg('submit-batch', 1000);
const single = arg('single', 500);
const serverAt = process.argv.indexOf('--redis-server');
const server = serverAt > 0 ? process.argv[serverAt + 1] : 'redis-server';
const keep = process.argv.includes('--keep');

const dir = mkdtempSync(join(tmpdir(), 'rota-callgrind-'));
const port = await freePort();
// Names uncompressed: each dump (one per phase) then names its functions on its own.
const proc = spawn('valgrind', ['--tool=callgrind', '--compress-strings=no', `--callgrind-out-file=${join(dir, 'cg.out')}`,
  server, '--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
// The server goes with this process, whatever ends it.
process.once('exit', () => proc.kill('SIGKILL'));
const url = `redis://127.0.0.1:${port}`;
const client = new Redis(url, { lazyConnect: true, retryStrategy: () => 100 });
client.on('error', () => {}); // refused while valgrind starts the server
for (let i = 0; ; i++) {
  try {
    await client.connect();
    await client.ping();
    break;
  } catch {
    if (i > 300) throw new Error(`redis-server under valgrind did not start on port ${port}`);
    client.disconnect();
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Dumps (and zeroes) the counters under `phase`. */
const dump = (phase: string) => execFileSync('callgrind_control', ['-d', phase, String(proc.pid)], { stdio: 'ignore' });
/** Instructions of the dump named `phase`. */
function counted(phase: string): number {
  for (const f of readdirSync(dir)) {
    const text = readFileSync(join(dir, f), 'utf8');
    if (!text.includes(`\ndesc: Trigger: dump ${phase}\n`)) continue;
    const m = /^(?:summary|totals): (\d+)/m.exec(text);
    if (m) return Number(m[1]);
  }
  throw new Error(`no callgrind dump for ${phase} in ${dir}`);
}

const keys = queueKeys('cg');
const q = new Queue('cg', { connection: url });
// The library loaded and the server warm before counting.
await q.submit({ task: 'noop', group: 'warm', args: PROBE_ARGS });
await client.flushall();
dump('setup');

await submitSpread(q, jobs, groups, submitBatch);
dump('submit');
const taken = await takeAll(client, keys, jobs, batch);
dump('take');
await finishAll(client, keys, taken, batch, '+s');
dump('finish');
for (let i = 0; i < single; i++) await q.submit({ task: 'noop', group: `s${i % 10}`, args: PROBE_ARGS });
dump('single');

const per = (phase: string, n: number) => Math.round(counted(phase) / n);
console.log(`${jobs} jobs over ${groups} groups; submit batches of ${submitBatch}, take and finish batches of ${batch}`);
console.log(`instructions per job: submit ${per('submit', jobs)}, take ${per('take', jobs)}, finish ${per('finish', jobs)}; ` +
  `lifecycle ${per('submit', jobs) + per('take', jobs) + per('finish', jobs)}`);
if (single > 0) console.log(`instructions per one-job submit call: ${per('single', single)}`);
await q.close();
await client.quit();
proc.kill('SIGTERM');
await new Promise((r) => proc.once('exit', r));
if (keep) console.log(`callgrind dumps: ${dir}`);
else rmSync(dir, { recursive: true, force: true });

/**
 * The benchmark harness: `npm run bench -- [--quick] [--only NAME[,NAME]] [--aof] [--runs N] [--systems a,b]`.
 * Starts a private redis-server, runs every case on Rota, BullMQ and GroupMQ (interleaved runs, each
 * system in its own child process), prints a table as it goes, and writes results/runs/<date>.json;
 * a full run also writes results/latest.json and results/REPORT.md with SVG charts. The cluster
 * cases get a Redis Cluster of three primaries of their own.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { parseInfo } from '../src/bench/measure.js';
import { SYSTEMS, type SystemName } from '../src/bench/peers/types.js';
import type { RunResult } from '../src/bench/workloads/common.js';
import { type LocalCluster, startCluster } from '../test/helpers/cluster.js';
import { TS_EXEC_ARGV } from '../test/helpers/processes.js';
import { RedisServer } from '../test/helpers/redis-server.js';
import { CASE_NAMES, type CaseSpec, cases } from './cases.js';
import type { RunReply, RunRequest } from './child.js';
import {
  type CaseRecord,
  clusterRunLine,
  clusterTable,
  exactlyOnceVerdict,
  summarize,
  tableRow,
  targets,
  textTable,
  writeResults,
} from './report.js';

const here = dirname(fileURLToPath(import.meta.url));
const resultsDir = join(here, 'results');

function parseArgs(argv: string[]) {
  const o = { quick: false, aof: false, only: [] as string[], runs: 0, systems: SYSTEMS as SystemName[], out: true, rate: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') o.quick = true;
    else if (a === '--aof') o.aof = true;
    else if (a === '--no-write') o.out = false;
    else if (a === '--only') o.only.push(...argv[++i].split(','));
    else if (a.startsWith('--only=')) o.only.push(...a.slice(7).split(','));
    else if (a === '--runs') o.runs = Number(argv[++i]);
    else if (a === '--systems') o.systems = argv[++i].split(',') as SystemName[];
    else if (a === '--rate') o.rate = Number(argv[++i]);
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

class SystemProcess {
  readonly proc: ChildProcess;
  private readonly waiters = new Map<number, (r: RunReply) => void>();
  readonly ready: Promise<void>;
  constructor(readonly system: SystemName) {
    this.proc = fork(join(here, 'child.ts'), [], { execArgv: [...TS_EXEC_ARGV], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.ready = new Promise((resolve) => {
      this.proc.on('message', (m: RunReply | { type: 'ready' }) => {
        if (m.type === 'ready') return resolve();
        this.waiters.get(m.seq)?.(m);
        this.waiters.delete(m.seq);
      });
    });
  }
  run(req: RunRequest): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      this.waiters.set(req.seq, (r) => (r.type === 'result' ? resolve(r.result) : reject(new Error(r.error))));
      this.proc.send(req);
    });
  }
  stop(): void {
    this.proc.send({ type: 'exit' });
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  const all = cases(opts.quick);
  const selected = opts.only.length
    ? all.filter((c) => opts.only.some((o) => c.name === o || c.name.startsWith(`${o}-`) || c.name.startsWith(o)))
    : all;
  if (selected.length === 0) throw new Error(`no case matches ${opts.only.join(',')}; cases: ${CASE_NAMES.join(', ')}`);
  const runs = opts.runs || (opts.quick ? 1 : 5);
  const warmups = opts.quick ? 0 : 1;

  const server = await RedisServer.start(opts.aof ? { appendfsync: 'everysec' } : {});
  const admin = new Redis(server.url);
  const redisVersion = parseInfo((await admin.info('server')) as string).redis_version;
  // Cluster cases: three primaries, no replicas, and a node timeout long enough that a node
  // starved of CPU on a busy machine is not taken for failed.
  const cluster: LocalCluster | null = selected.some((c) => c.kind === 'cluster') ? await startCluster(3, 0, 15_000) : null;
  const children = new Map(opts.systems.map((s) => [s, new SystemProcess(s)]));
  await Promise.all([...children.values()].map((c) => c.ready));
  const fewer =
    opts.runs || opts.quick ? '' : [...new Set(selected.flatMap((c) => (c.runs ? [`${c.name}: ${c.runs}`] : [])))].join(', ');
  console.log(
    `rota bench: ${selected.length} cases × ${opts.systems.join(', ')}; ${warmups} warm-up + ${runs} runs each${fewer ? ` (${fewer})` : ''}; redis ${redisVersion} on ${server.url}${opts.aof ? ' (AOF everysec)' : ''}; load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );

  const records: CaseRecord[] = [];
  let seq = 0;
  let failed = false;
  const runOne = async (system: SystemName, spec: CaseSpec, rate?: number): Promise<RunResult> => {
    const servers = spec.kind === 'cluster' && cluster ? cluster.nodes.map((n) => new Redis(n.port, '127.0.0.1')) : [admin];
    for (const c of servers) {
      await c.flushall();
      await c.config('RESETSTAT');
      if (c !== admin) c.disconnect();
    }
    return children.get(system)!.run({
      type: 'run',
      seq: ++seq,
      system,
      url: server.url,
      spec,
      quick: opts.quick,
      rate,
      cluster: spec.kind === 'cluster' ? cluster?.startupNodes : undefined,
    });
  };

  // Latency cases run at a share of each system's own maximum in the latency setup (one-by-one
  // submits with 100 outstanding while its executor runs), measured once per system.
  const maxRates = new Map<SystemName, number>();
  const maxRate = async (system: SystemName, spec: CaseSpec): Promise<number> => {
    let m = maxRates.get(system);
    if (m === undefined) {
      m = (await runOne(system, spec)).jobsPerSec;
      maxRates.set(system, m);
      console.log(
        `  calibration        ${system.padEnd(8)} maximum ${fmt(m)} jobs/s (one-by-one submits, 100 in flight, executor running)`,
      );
    }
    return m;
  };

  // Cases of one interleave group run round by round (warm-ups, then run 1 of each, ...), so
  // that a change of load on the machine hits them alike; every other case runs on its own.
  const blocks: CaseSpec[][] = [];
  for (const spec of selected) {
    const last = blocks.at(-1);
    if (spec.interleave && last?.[0].interleave === spec.interleave) last.push(spec);
    else blocks.push([spec]);
  }
  for (const block of blocks) {
    const plans = [];
    for (const spec of block) {
      const rates = new Map<SystemName, number>();
      if (spec.kind === 'latency') {
        // --rate: every system at the same arrival rate, instead of a share of its own maximum.
        for (const s of opts.systems) rates.set(s, opts.rate || ((await maxRate(s, spec)) * spec.loadPct) / 100);
      }
      const systems = opts.systems.filter((s) => !spec.systems || spec.systems.includes(s));
      const results = new Map<SystemName, RunResult[]>(systems.map((s) => [s, []]));
      const caseRuns = opts.runs || (opts.quick ? 1 : (spec.runs ?? runs));
      plans.push({ spec, rates, systems, results, caseRuns });
    }
    const rounds = warmups + Math.max(...plans.map((p) => p.caseRuns));
    for (let k = 0; k < rounds; k++) {
      for (const { spec, rates, systems, results, caseRuns } of plans) {
        if (k >= warmups + caseRuns) continue;
        for (const s of systems) {
          let r: RunResult;
          try {
            r = await runOne(s, spec, rates.get(s));
          } catch (err) {
            console.error(`!!! ${spec.name} ${s}: ${(err as Error).message}`);
            failed = true;
            continue;
          }
          const warm = k < warmups;
          if (!warm) results.get(s)!.push(r);
          const verdict = exactlyOnceVerdict(r);
          if (verdict !== 'ok') failed = true;
          const lat = r.extra.p99Ms != null ? `  p50 ${r.extra.p50Ms?.toFixed(2)} ms  p99 ${r.extra.p99Ms.toFixed(2)} ms` : '';
          process.stdout.write(
            `  ${spec.name.padEnd(18)} ${s.padEnd(8)} ${warm ? 'warm-up' : `run ${k - warmups + 1}/${caseRuns}`}  ${fmt(r.jobsPerSec).padStart(8)} jobs/s  ${(r.redis.cpuUs / Math.max(1, r.jobs)).toFixed(1).padStart(6)} µs/job${lat}  ${verdict === 'ok' ? (r.capped ? 'ok (capped)' : 'ok') : `!!! EXACTLY-ONCE ${verdict}`}\n`,
          );
          if (spec.kind === 'cluster') console.log(`      ${clusterRunLine(r)}`);
        }
      }
    }
    for (const { spec, systems, results } of plans) {
      const caseRecs = systems.filter((s) => results.get(s)!.length).map((s) => summarize(spec.name, s, results.get(s)!));
      records.push(...caseRecs);
      console.log(`\n${textTable(caseRecs.map(tableRow))}\n`);
    }
  }

  for (const c of children.values()) c.stop();
  admin.disconnect();
  await server.destroy();
  await cluster?.destroy();

  const order = all.map((c) => c.name);
  const sorted = order.flatMap((c) => records.filter((r) => r.case === c));
  console.log(`\n== all results ==\n${textTable(sorted.map(tableRow))}\n`);
  const clusterRecs = sorted.filter((r) => r.case.startsWith('cluster-'));
  if (clusterRecs.length)
    console.log(`== cluster (Rota only: BullMQ and GroupMQ cannot shard a queue) ==\n${clusterTable(clusterRecs)}\n`);
  console.log('== targets (Rota) ==');
  for (const t of targets(records)) console.log(`  [${t.met === null ? ' - ' : t.met ? 'met' : 'NOT'}] ${t.name}: ${t.value}`);
  const bad = records.filter((r) => r.exactlyOnce !== 'ok');
  for (const r of bad) console.log(`\n!!!!!! EXACTLY-ONCE CHECK FAILED: ${r.case} ${r.system}: ${r.exactlyOnce} !!!!!!`);

  if (opts.out) {
    const command = `npm run bench --${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
    const { json, md } = writeResults(
      resultsDir,
      {
        date: new Date().toISOString(),
        command,
        quick: opts.quick,
        aof: opts.aof,
        runs,
        node: process.version,
        redis: `Redis ${redisVersion}`,
        cpus: `${cpus().length} × ${cpus()[0]?.model ?? '?'}`,
        loadavg: loadavg(),
        seconds: (performance.now() - t0) / 1000,
      },
      records,
      order,
      opts.only.length > 0 || opts.rate > 0 ? 'partial' : opts.quick ? 'quick' : undefined,
    );
    console.log(
      md
        ? `\nwrote ${json}, results/latest.json and ${md}`
        : `\nwrote ${json} (not a full run: latest.json and REPORT.md are left as they are)`,
    );
  }
  console.log(`done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  if (failed || bad.length) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

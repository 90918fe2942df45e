/**
 * What OpenTelemetry costs a job: one process submits jobs one by one (1,000 in flight) while an
 * executor of the same process (concurrency 50) drains them, in three set-ups, each run in a
 * fresh child process, interleaved:
 *   absent   @opentelemetry/api not installed (resolving it fails, test/fixtures/without-otel.mjs);
 *   api      the API loaded, no tracer provider registered (what an untraced application pays);
 *   sdk      a tracer provider registered (sdk-trace-base, every span kept by the in-memory exporter).
 * Prints per set-up the median over the runs of jobs/s (submit of the first to end of the last)
 * and Node CPU per job (user + system of the process over that time); then what the two span
 * starts of a job cost alone, in this process (the API loaded, no tracer).
 * Usage: npx tsx benchmarks/probes/tracing-cost.ts [--jobs 20000] [--runs 5]
 */
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { TS_EXEC_ARGV } from '../../test/helpers/processes.js';
import { arg, labRedis } from './lab.js';

const MODES = ['absent', 'api', 'sdk'] as const;
type Mode = (typeof MODES)[number];
interface Result {
  jobsPerSecond: number;
  cpuUsPerJob: number;
}

const jobs = arg('jobs', 20_000);
const childAt = process.argv.indexOf('--child');

if (childAt > 0) {
  const mode = process.argv[childAt + 1] as Mode;
  if (mode === 'sdk') {
    const { trace } = await import('@opentelemetry/api');
    const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] }),
    );
  } else if (mode === 'api') {
    await import('@opentelemetry/api');
  }
  const { Queue, Worker } = await import('../../src/index.js');
  const url = process.env.REDIS_URL!;
  const name = `trace-${mode}`;
  const queue = new Queue(name, { connection: url });
  let done = 0;
  let allDone: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const worker = new Worker(
    name,
    {
      noop: () => {
        if (++done === jobs) allDone();
      },
    },
    { connection: url, concurrency: 50, keepSucceeded: { count: 1000 } },
  );
  await worker.run();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const inFlight = new Set<Promise<unknown>>();
  for (let i = 0; i < jobs; i++) {
    const p = queue.submit({ task: 'noop', group: `g${i % 100}`, args: i });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    if (inFlight.size >= 1000) await Promise.race(inFlight);
  }
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const result: Result = { jobsPerSecond: jobs / seconds, cpuUsPerJob: (cpu.user + cpu.system) / jobs };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  await worker.close();
  await queue.close();
} else {
  const runs = arg('runs', 5);
  const lab = await labRedis();
  const self = fileURLToPath(import.meta.url);
  const hook = pathToFileURL(fileURLToPath(new URL('../../test/fixtures/without-otel.mjs', import.meta.url))).href;
  const results: Record<Mode, Result[]> = { absent: [], api: [], sdk: [] };
  const runChild = (mode: Mode) =>
    new Promise<Result>((resolve, reject) => {
      const execArgv = [...TS_EXEC_ARGV, ...(mode === 'absent' ? ['--import', hook] : [])];
      execFile(
        process.execPath,
        [...execArgv, self, '--child', mode, '--jobs', String(jobs)],
        { env: { ...process.env, REDIS_URL: lab.url } },
        (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Result)),
      );
    });
  for (let r = 0; r < runs; r++) {
    // each run in another order, so that no set-up always runs first
    for (let k = 0; k < MODES.length; k++) {
      const mode = MODES[(r + k) % MODES.length];
      await lab.admin.flushall();
      const result = await runChild(mode);
      results[mode].push(result);
      console.log(
        `run ${r + 1} ${mode.padEnd(6)} ${result.jobsPerSecond.toFixed(0)} jobs/s, ${result.cpuUsPerJob.toFixed(1)} µs CPU/job`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`\n${jobs} jobs per run, medians of ${runs} runs`);
  for (const mode of MODES) {
    const rs = results[mode];
    console.log(
      `${mode.padEnd(6)} ${median(rs.map((x) => x.jobsPerSecond))
        .toFixed(0)
        .padStart(7)} jobs/s  ` +
        `${median(rs.map((x) => x.cpuUsPerJob))
          .toFixed(1)
          .padStart(6)} µs Node CPU per job`,
    );
  }
  // What the two span starts of a job cost alone with the API loaded and no tracer registered.
  const { startRunSpan, startSubmitSpan } = await import('../../src/queue/tracing.js');
  const job = { id: 'j', group: 'g', task: 'noop', retries: 0 };
  const n = 1_000_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) startSubmitSpan('q', [job]);
  const t1 = performance.now();
  for (let i = 0; i < n; i++) startRunSpan('q', job, undefined);
  const t2 = performance.now();
  console.log(
    `api, alone: ${(((t1 - t0) * 1e6) / n).toFixed(0)} ns per submit span start, ${(((t2 - t1) * 1e6) / n).toFixed(0)} ns per run span start`,
  );
  await lab.close();
}

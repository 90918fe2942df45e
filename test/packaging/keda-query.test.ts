/**
 * The query the KEDA overlay ships (deploy/kubernetes, its ScaledObject's trigger, text as
 * `kubectl kustomize overlays/keda` gives it), evaluated by a real Prometheus (Debian's
 * `prometheus`, scraping every second) that scrapes real `rota worker` and `rota scheduler`
 * processes on a private Redis: it gives the backlog KEDA scales on (jobs running, runnable and
 * due within a minute, read from Redis) while executors run, still once they are gone (the
 * scheduler's metrics), and a number, not nothing, when a term's series is missing (dropped by the
 * scrape's relabelling) or every target is down, where the sum without its `or vector(0)` terms
 * is empty, which KEDA reads as 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { cliEntry } from '../helpers/cli.js';
import { kustomize } from '../helpers/kustomize.js';
import { type RunningPrometheus, type Sample, startPrometheus } from '../helpers/prometheus.js';
import { eventually, privateRedis } from '../helpers/setup.js';

const scaled = kustomize('overlays/keda').objs.find((o) => o.kind === 'ScaledObject');
/** The shipped query, as KEDA sends it. */
const QUERY: string = scaled?.spec.triggers[0].metadata.query;
/** The queue it names. */
const QUEUE = /queue="([^"]+)"/.exec(QUERY)?.[1] ?? '';
/** The same sum without its fallbacks to 0, as the overlay had it before. */
const BARE = QUERY.replaceAll(/\(\s*(max\([^()]*\))\s+or\s+vector\(0\)\s*\)/g, '$1');

/** Jobs submitted: running or runnable at once. */
const NOW = 10;
/** Jobs submitted delayed: due within the minute. */
const SOON = 3;
/** Executors, and the slots of each. */
const EXECUTORS = 2;
const SLOTS = 2;

/** A `rota` process this file started, and the metrics address it logged. */
class RotaProcess {
  readonly child: ChildProcess;
  private out = '';
  readonly exited: Promise<void>;

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [...cliEntry(), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child.stdout?.on('data', (d: Buffer) => {
      this.out += d.toString();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  /** host:port of its metrics server, once it serves. */
  target(): Promise<string> {
    return eventually(async () => {
      if (this.child.exitCode !== null) throw new Error(`rota exited (${this.child.exitCode}):\n${this.out}`);
      const url = /"url":"(http:\/\/[^"]+)","msg":"serving metrics"/.exec(this.out)?.[1];
      return url && new URL(url).host;
    }, 45_000);
  }

  /** SIGTERM (a graceful shutdown: running jobs go back to the queue), and its exit. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}

/** prometheus.yml: one job scraping `targets` every second, less the metrics named in `drop`. */
function config(targets: string[], drop: string[] = []): string {
  return JSON.stringify({
    global: { scrape_interval: '1s', scrape_timeout: '1s' },
    scrape_configs: [
      {
        job_name: 'rota',
        static_configs: [{ targets }],
        metric_relabel_configs: drop.map((name) => ({ source_labels: ['__name__'], regex: name, action: 'drop' })),
      },
    ],
  });
}

describe('the KEDA overlay’s query, on a real Prometheus scraping real executors and a scheduler', () => {
  const redis = privateRedis();
  let dir: string;
  let queue: Queue;
  let executors: RotaProcess[] = [];
  let scheduler: RotaProcess;
  let targets: { executors: string[]; scheduler: string };
  let prometheus: RunningPrometheus;

  /** The vector `promql` gives once `done` holds of it (polled; the last one seen in the error otherwise). */
  async function settle(promql: string, done: (v: Sample[]) => boolean, what: string): Promise<Sample[]> {
    let last: Sample[] = [];
    try {
      return await eventually(async () => {
        last = await prometheus.query(promql);
        return done(last) && last;
      }, 45_000);
    } catch {
      throw new Error(`${what}: ${promql} last gave ${JSON.stringify(last)}`);
    }
  }
  /** The one number a query gives (it fails on an empty vector or several elements). */
  const numberOf = (v: Sample[]) => {
    expect(v).toHaveLength(1);
    return v[0]!.value;
  };
  /** The backlog KEDA scales on, as Redis holds it: running, waiting and delayed (all due within the minute). */
  async function backlog(): Promise<number> {
    const c = await queue.counts();
    return c.running + c.waiting + c.delayed;
  }
  /** Whether every target's last scrape gave `up` as `up[target]`. */
  const scraped = (up: Record<string, 0 | 1>) => (v: Sample[]) =>
    Object.entries(up).every(([target, want]) => v.some((s) => s.metric.instance === target && s.value === want));

  beforeAll(async () => {
    expect(QUEUE).toBe('default');
    dir = mkdtempSync(join(tmpdir(), 'rota-keda-'));
    const tasks = join(dir, 'tasks.mjs');
    // (each run holds its slot until its signal aborts: the backlog stays put while Prometheus scrapes)
    writeFileSync(
      tasks,
      "export default { async hold({ signal }) { await new Promise((r) => signal.addEventListener('abort', r)); } };\n",
    );
    queue = new Queue(QUEUE, { connection: redis.server.url });
    const metrics = ['--metrics-port', '0', '--metrics-host', '127.0.0.1', '--metrics-sweep-interval', '1000'];
    const common = ['--redis', redis.server.url, '--queue', QUEUE];
    executors = Array.from(
      { length: EXECUTORS },
      () =>
        new RotaProcess([
          ...common,
          'worker',
          '--tasks',
          tasks,
          '--concurrency',
          String(SLOTS),
          '--shutdown-timeout',
          '1000',
          ...metrics,
        ]),
    );
    scheduler = new RotaProcess([...common, 'scheduler', ...metrics]);
    targets = { executors: await Promise.all(executors.map((e) => e.target())), scheduler: await scheduler.target() };
    prometheus = await startPrometheus(config([...targets.executors, targets.scheduler]));
  }, 180_000);

  afterAll(async () => {
    await Promise.all([...executors, scheduler].filter(Boolean).map((p) => p.stop()));
    await prometheus?.destroy();
    await queue?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('gives the backlog while executors run: jobs running, runnable and due within the minute', async () => {
    await queue.submitBulk([
      ...Array.from({ length: NOW }, () => ({ task: 'hold' })),
      ...Array.from({ length: SOON }, () => ({ task: 'hold', delay: 50_000 })),
    ]);
    await eventually(async () => (await queue.counts()).running === EXECUTORS * SLOTS, 30_000);
    const expected = await backlog();
    expect(expected).toBe(NOW + SOON);
    // (every process reports the same queue-wide gauges: each is counted once, not three times)
    const v = await settle(QUERY, (r) => r.length === 1 && r[0]!.value === expected, 'the backlog while executors run');
    expect(numberOf(v)).toBe(expected);
    expect(numberOf(await prometheus.query(`max(rota_queue_running_jobs{queue="${QUEUE}"})`))).toBe(EXECUTORS * SLOTS);
  }, 120_000);

  it('still gives it once the executors are gone, from the scheduler’s metrics', async () => {
    await Promise.all(executors.map((e) => e.stop()));
    const expected = await backlog();
    expect(await queue.counts()).toMatchObject({ running: 0, waiting: NOW, delayed: SOON });
    await settle(
      'up',
      scraped({ ...Object.fromEntries(targets.executors.map((t) => [t, 0 as const])), [targets.scheduler]: 1 }),
      'the executors’ targets down',
    );
    const v = await settle(QUERY, (r) => r.length === 1 && r[0]!.value === expected, 'the backlog from the scheduler');
    expect(numberOf(v)).toBe(NOW + SOON);
  }, 120_000);

  it('gives the other terms when one term’s series is missing, where the bare sum gives nothing', async () => {
    await prometheus.reload(config([...targets.executors, targets.scheduler], ['rota_queue_due_soon_jobs']));
    await settle('rota_queue_due_soon_jobs', (r) => r.length === 0, 'the due-soon series dropped');
    // (that term alone is missing: the others are still scraped)
    expect(await prometheus.query(`max(rota_queue_runnable_jobs{queue="${QUEUE}"})`)).toHaveLength(1);
    expect(numberOf(await prometheus.query(QUERY))).toBe(NOW);
    expect(BARE).not.toMatch(/vector/);
    expect(await prometheus.query(BARE)).toEqual([]);
  }, 120_000);

  it('gives 0, not nothing, when every target is down', async () => {
    await scheduler.stop();
    await settle('up', scraped({ [targets.scheduler]: 0 }), 'the scheduler’s target down');
    await settle(`rota_queue_runnable_jobs{queue="${QUEUE}"}`, (r) => r.length === 0, 'the gauges gone');
    expect(numberOf(await prometheus.query(QUERY))).toBe(0);
    expect(await prometheus.query(BARE)).toEqual([]);
  }, 120_000);
});

/**
 * An optional Prometheus endpoint for executors and schedulers (prom-client): jobs by state, the
 * autoscaling gauges (runnable jobs, oldest runnable wait, running jobs, executor slots, jobs due
 * soon), optionally per group the queue depth and rate limits, all from one shared sweep of Redis
 * made at most once per `sweepIntervalMs` (./metrics-sweep.ts); submit-to-start waits and
 * periodic lateness (observed from the executors' events); the counters of ./counters.ts. It binds 127.0.0.1 unless told
 * otherwise: it has no authentication.
 */
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { z } from 'zod';
import type { PoolStats, Worker } from '../executor/worker.js';
import { checkOptions, func, type OptionsOf, text, whole } from '../options.js';
import type { Scheduler } from '../periodic/scheduler.js';
import type { Job } from '../queue/job.js';
import type { Queue } from '../queue/queue.js';
import type { GroupInfo } from '../queue/reader.js';
import { maskText } from '../redis/connection.js';
import { MetricsStore } from '../redis/metrics-store.js';
import { QueueStore } from '../redis/queue-store.js';
import { shardNumbers } from '../redis/shards.js';
import { registerCounters } from './counters.js';
import { listen } from './listen.js';
import { type Autoscale, type GroupLabels, MetricsSweep, type Snapshot } from './metrics-sweep.js';

export interface MetricsServer {
  /** Where the metrics are served, the address bound, e.g. http://127.0.0.1:9464/metrics. */
  url: string;
  /** The address the server bound (e.g. 127.0.0.1, 0.0.0.0, ::). */
  host: string;
  port: number;
  registry: Registry;
  /**
   * Stops serving: idle connections close at once, a scrape in progress gets its answer (cut
   * after 2 s), and its keep-alive connection ends with it.
   */
  close(): Promise<void>;
}

/** The default of {@link MetricsOptions.sweepIntervalMs}. */
export const DEFAULT_SWEEP_INTERVAL_MS = 10_000;

/** How long {@link MetricsServer.close} lets a scrape in progress finish before it cuts its connection. */
const CLOSE_GRACE_MS = 2000;

const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300];

/** The {@link GroupLabels} that `none`, `all` or `top:N` (N from 1 to 100,000) names; undefined for other text. */
export function groupLabels(text: string): GroupLabels | undefined {
  if (text === 'none' || text === 'all') return text;
  const m = /^top:([1-9]\d{0,5})$/.exec(text);
  return m && Number(m[1]) <= 100_000 ? { top: Number(m[1]) } : undefined;
}

/** Options of {@link serveMetrics}. */
export const METRICS_OPTIONS = {
  /** Port to listen on (0: a free one; up to 65,535). */
  port: whole(0, 65_535),
  /**
   * Address to bind; default 127.0.0.1 (loopback only: the endpoint has no authentication).
   * Prometheus in a pod scrapes the pod's address: bind 0.0.0.0 there.
   */
  host: text(255).optional(),
  /**
   * Queue whose counts and group depths are exported (of any task map), and whose own submits
   * are counted (`rota_jobs_submitted_total`: pass the producer's Queue to count its jobs).
   */
  // biome-ignore lint/suspicious/noExplicitAny: a typed Queue<Tasks> is no Queue (its submits take less), and metrics never submit.
  queue: z.custom<Queue<any>>(
    (v) => typeof v === 'object' && v !== null && typeof (v as { counts?: unknown }).counts === 'function',
    'must be a Queue',
  ),
  /** Executors whose jobs' waits are observed and whose runs and recoveries are counted. */
  workers: z.array(z.custom<Worker>((v) => typeof v === 'object' && v !== null, 'must be a Worker')).default([]),
  /**
   * Which groups get series of their own (a `group` label, whose values are group names):
   * `none` (the default: no group name is shown, and a sweep reads no group record beyond the
   * autoscaling sweep's), `top:N` (the N deepest groups, N from 1 to 100,000), or `all` (every
   * group: unbounded cardinality, for queues of a few hundred groups).
   */
  groups: z
    .custom<'none' | 'all' | `top:${number}`>(
      (v) => typeof v === 'string' && groupLabels(v) !== undefined,
      'must be none, all or top:N (N from 1 to 100000)',
    )
    .default('none'),
  /**
   * A sweep of Redis starts at most once per this many ms, shared by every scrape: scrapes
   * within it are answered from the last sweep. 1,000 to 3,600,000; default 10,000.
   */
  sweepIntervalMs: whole(1000, 3_600_000, 'ms').default(DEFAULT_SWEEP_INTERVAL_MS),
  /** Scheduler replicas whose occurrences and jumps of the server's clock are counted (executors' jumps are counted too). */
  schedulers: z.array(z.custom<Scheduler>((v) => typeof v === 'object' && v !== null, 'must be a Scheduler')).default([]),
  /**
   * Told of a scrape that failed (a Redis error, say): the response is a 500 that says only that
   * the scrape failed, and the detail goes here. Default: one line on stderr, its URLs' secrets
   * masked.
   */
  onError: func<(err: Error) => void>().default(
    () => (err: Error) => process.stderr.write(`rota metrics: a scrape failed: ${maskText(err.message)}\n`),
  ),
};

/** Options of {@link serveMetrics}. */
export type MetricsOptions = OptionsOf<typeof METRICS_OPTIONS>;

/**
 * Builds the registry and starts serving it on `/metrics`.
 * @throws {@link ValidationError} naming the first bad option; nothing is served then.
 */
export async function serveMetrics(options: MetricsOptions): Promise<MetricsServer> {
  const opts = checkOptions(METRICS_OPTIONS, options);
  const registry = new Registry();
  const { queue } = opts;
  const labels = groupLabels(opts.groups)!;
  const sweep = new MetricsSweep({
    stores: shardNumbers(queue.shards).map(
      (shard) => new MetricsStore(new QueueStore(queue.client, queue.name, { maxEvents: 0, shard, shards: queue.shards })),
    ),
    shards: queue.shards,
    groups: labels,
    intervalMs: opts.sweepIntervalMs,
  });

  // The waits per group, as the group gauges: none (one series), the groups of the last sweep's
  // top N (`labelled`; the others' waits under group ""), or every group.
  const labelled = new Set<string>();
  const wait = new Histogram({
    name: 'rota_submit_to_start_seconds',
    help:
      labels === 'none'
        ? "Time from submit (or a delayed job's due time) to the start of a run"
        : `Time from submit (or a delayed job's due time) to the start of a run, per group${labels === 'all' ? '' : ' (group "": the groups outside the deepest listed)'}`,
    labelNames: labels === 'none' ? ['queue'] : ['queue', 'group'],
    buckets: WAIT_BUCKETS,
    registers: [registry],
    // (a scrape shows the series of the groups of its own sweep)
    async collect() {
      if (typeof labels === 'object') await snapshot();
    },
  });
  const waitLabels = (group: string): Record<string, string> =>
    labels === 'none'
      ? { queue: queue.name }
      : { queue: queue.name, group: labels === 'all' || labelled.has(group) ? group : '' };

  // Every gauge reads the shared sweep: the registry collects its metrics concurrently, and a
  // scrape within the interval costs Redis nothing. A new snapshot also renews the groups that
  // keep their own series of the waits (top:N).
  let seen: Snapshot | undefined;
  const snapshot = async (): Promise<Snapshot> => {
    const s = await sweep.read();
    if (s !== seen && typeof labels === 'object') {
      seen = s;
      const kept = new Set(s.groups.map((g) => g.group));
      for (const group of labelled) {
        if (!kept.has(group)) {
          wait.remove({ queue: queue.name, group });
          jobCounters.dropGroup(group);
          labelled.delete(group);
        }
      }
      for (const group of kept) labelled.add(group);
    }
    return s;
  };

  const jobCounters = registerCounters({
    registry,
    queue,
    workers: opts.workers,
    schedulers: opts.schedulers,
    grouped: labels !== 'none',
    groupLabel: (group) => waitLabels(group).group ?? '',
    settleGroups: async () => {
      if (typeof labels === 'object') await snapshot();
    },
    cancelled: async () => (await snapshot()).cancelled,
  });

  new Gauge({
    name: 'rota_jobs',
    help: 'Jobs per state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      for (const [state, n] of Object.entries((await snapshot()).counts)) this.set({ queue: queue.name, state }, n);
    },
  });
  /** A gauge per group of `value` (groups for which it gives undefined have none). */
  const groupGauge = (name: string, help: string, value: (g: GroupInfo) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue', 'group'],
      registers: [registry],
      async collect() {
        const { groups } = await snapshot();
        this.reset();
        for (const g of groups) {
          const v = value(g);
          if (v !== undefined) this.set({ queue: queue.name, group: g.group }, v);
        }
      },
    });
  if (labels !== 'none') {
    groupGauge('rota_group_waiting', 'Runnable jobs waiting per group', (g) => g.waiting);
    groupGauge('rota_group_running', 'Jobs running per group', (g) => g.running);
    groupGauge(
      'rota_group_rate_max',
      'Most starts a group with a rate limit may have in any window (rota_group_rate_window_seconds)',
      (g) => g.rate?.max,
    );
    groupGauge('rota_group_rate_window_seconds', "The window of a group's rate limit", (g) =>
      g.rate ? g.rate.perMs / 1000 : undefined,
    );
  }

  // The queue's gauges: name, help, and the autoscale figure each shows.
  const queueGauges: Array<[string, string, keyof Autoscale]> = [
    [
      'rota_queue_runnable_jobs',
      'Waiting jobs an executor with a free slot could start now: waiting jobs not in paused groups, nor in groups at their concurrency limit or parked at their rate (summed over shards)',
      'runnable',
    ],
    [
      'rota_queue_held_jobs',
      'Waiting jobs of groups at their concurrency limit or parked at their rate (not paused): more executors would not start them',
      'held',
    ],
    [
      'rota_queue_oldest_runnable_wait_seconds',
      "How long the oldest runnable job has waited: from its submit, a delayed job's due time or a retry's due time (0: none)",
      'oldestWait',
    ],
    ['rota_queue_running_jobs', 'Jobs in state running (summed over shards)', 'running'],
    [
      'rota_queue_due_soon_jobs',
      "Delayed jobs and stuck jobs' retries due within the next minute, overdue ones not yet made waiting included",
      'dueSoon',
    ],
    ['rota_executor_slots', "Run slots (concurrency) of the queue's live executors, each executor counted once", 'slots'],
    ['rota_executor_slots_busy', "Jobs the queue's live executors report running", 'busySlots'],
  ];
  for (const [name, help, figure] of queueGauges) {
    new Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers: [registry],
      async collect() {
        this.set({ queue: queue.name }, (await snapshot()).autoscale[figure]);
      },
    });
  }
  const lateness = new Histogram({
    name: 'rota_periodic_lateness_seconds',
    help: 'Time from a periodic occurrence to the submit of its job',
    labelNames: ['queue', 'tracker'],
    buckets: WAIT_BUCKETS,
    registers: [registry],
  });
  const observe = (job: Job) => {
    if (job.started !== undefined)
      wait.observe(
        waitLabels(job.group),
        // (a delayed job waits from its due time)
        Math.max(0, job.started - Math.max(job.submitted, job.runAt ?? 0)) / 1000,
      );
    if (job.tracker && job.occurrence !== undefined) {
      lateness.observe({ queue: queue.name, tracker: job.tracker }, Math.max(0, job.submitted - job.occurrence) / 1000);
    }
  };
  const jumps = new Counter({
    name: 'rota_server_clock_jumps_total',
    help: "Jumps of the Redis server's clock (a second or more against their monotonic clock) the executors and schedulers noticed",
    labelNames: ['queue', 'direction'],
    registers: [registry],
  });
  const countJump = (j: { jumpMs: number }) => jumps.inc({ queue: queue.name, direction: j.jumpMs > 0 ? 'forward' : 'back' });
  for (const s of opts.schedulers) s.on('clockJump', countJump);
  for (const w of opts.workers) {
    w.on('clockJump', countJump);
    w.on('completed', observe);
    w.on('failed', observe);
    w.on('stuck', observe);
  }

  registerPoolMetrics(registry, queue.name, opts.workers);

  const reportError = opts.onError;
  let closing = false;
  const server: Server = createServer((req, res) => {
    const reply = (status: number, type: string, body: string) => {
      // (once closing, a keep-alive connection ends with its response, a scrape that was in
      // progress too: a Prometheus that scrapes more often than the keep-alive timeout would
      // otherwise hold close() open for ever)
      res.writeHead(status, { 'content-type': type, ...(closing && { connection: 'close' }) }).end(body);
    };
    if (req.url !== '/metrics') {
      reply(404, 'text/plain', 'see /metrics\n');
      return;
    }
    registry.metrics().then(
      (body) => reply(200, registry.contentType, body),
      (err: Error) => {
        // (the detail stays here: an error's text may name servers, keys or a user)
        reply(500, 'text/plain', 'the scrape failed; see the server log\n');
        reportError(err);
      },
    );
  });
  const bound = await listen(server, opts.port, opts.host);
  return {
    url: `${bound.origin}/metrics`,
    host: bound.host,
    port: bound.port,
    registry,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        // (idle connections are closed at once; one whose scrape has not ended in time is cut)
        const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
      }),
  };
}

/**
 * The pools of the executors' isolated tasks (src/executor/pool.ts): threads or processes alive,
 * busy, and ended by cause (`crash`, `exit`, `oom`, `killed`, `abandoned`: ignored its aborted
 * signal, `recycled`, `memory`, `start`: could not start).
 */
function registerPoolMetrics(registry: Registry, queue: string, workers: Worker[]): void {
  const each = (fn: (labels: { queue: string; task: string; in: string }, p: PoolStats) => void) => {
    for (const w of workers) for (const p of w.poolStats()) fn({ queue, task: p.task, in: p.in }, p);
  };
  const gauge = (name: string, help: string, value: (p: PoolStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue', 'task', 'in'],
      registers: [registry],
      collect() {
        this.reset();
        each((labels, p) => this.inc(labels, value(p)));
      },
    });
  gauge('rota_isolated_pool_size', 'Threads or processes of an isolated task alive (started or starting)', (p) => p.size);
  gauge('rota_isolated_pool_busy', 'Threads or processes of an isolated task running a job', (p) => p.busy);
  new Counter({
    name: 'rota_isolated_restarts_total',
    help: 'Threads or processes of an isolated task ended and replaced, by cause',
    labelNames: ['queue', 'task', 'in', 'cause'],
    registers: [registry],
    collect() {
      this.reset();
      each((labels, p) => {
        for (const [cause, n] of Object.entries(p.restarts)) if (n) this.inc({ ...labels, cause }, n);
      });
    },
  });
}

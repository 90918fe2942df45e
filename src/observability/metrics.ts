/**
 * An optional Prometheus endpoint for executors and schedulers (prom-client): jobs by state and
 * queue depth per group and the groups' rate limits (read from Redis at scrape time), the
 * autoscaling gauges (runnable jobs, oldest runnable wait, running jobs, executor slots, jobs due
 * soon; read by one script call per shard a scrape), submit-to-start waits per group and periodic
 * lateness (observed from the executors' events).
 */
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Worker } from '../executor/worker.js';
import { checkOptions, METRICS_OPTIONS } from '../options.js';
import type { Scheduler } from '../periodic/scheduler.js';
import type { Job } from '../queue/job.js';
import type { Queue } from '../queue/queue.js';
import type { GroupInfo } from '../queue/reader.js';
import { type AutoscaleRead, MetricsStore } from '../redis/metrics-store.js';
import { QueueStore } from '../redis/queue-store.js';
import { shardNumbers } from '../redis/shards.js';
import { listen } from './listen.js';

export interface MetricsOptions {
  /** Port to listen on (0: a free one; up to 65,535). */
  port: number;
  /** Address to bind; default 0.0.0.0. */
  host?: string;
  /** Queue whose counts and group depths are exported (of any task map: it is only read). */
  // biome-ignore lint/suspicious/noExplicitAny: a typed Queue<Tasks> is no Queue (its submits take less), and metrics never submit.
  queue: Queue<any>;
  /** Executors whose jobs' waits are observed. */
  workers?: Worker[];
  /** Scheduler replicas whose jumps of the server's clock are counted (executors' are counted too). */
  schedulers?: Scheduler[];
  /** At most this many groups get a depth series (the deepest are kept): 1 to 100,000; default 1,000. */
  maxGroups?: number;
}

export interface MetricsServer {
  /** Where the metrics are served, e.g. http://127.0.0.1:9464/metrics. */
  url: string;
  registry: Registry;
  close(): Promise<void>;
}

const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300];

/** Fields of a shard's `groups` hash the autoscaling read sweeps at most a scrape (a larger hash takes several scrapes a round). */
export const AUTOSCALE_SWEEP_FIELDS = 2000;
/** Executors the autoscaling read lists at most per shard. */
const AUTOSCALE_MAX_EXECUTORS = 10_000;
/** The window of `rota_queue_due_soon_jobs`, ms. */
const DUE_WINDOW_MS = 60_000;

/** What the autoscaling gauges show of a queue, summed over its shards. */
export interface Autoscale {
  runnable: number;
  held: number;
  /** Seconds. */
  oldestWait: number;
  running: number;
  dueSoon: number;
  slots: number;
  busySlots: number;
}

/** The sums of a shard's groups sweep (see lua/metrics-autoscale.lua). */
interface Swept {
  paused: number;
  held: number;
  /** ms; undefined: none. */
  oldestStart?: number;
}

/**
 * The autoscaling read of a queue: one script call per shard, whose sweep of the shard's
 * `groups` hash carries on from where the last scrape's stopped. The group sums of a shard are its
 * last whole round's (the round in progress until one ended), so they are exact while a shard's
 * hash holds at most `sweepFields` fields, and a round or so old beyond that.
 * @internal exported for the tests.
 */
export function autoscaleReader(stores: MetricsStore[], sweepFields = AUTOSCALE_SWEEP_FIELDS): () => Promise<Autoscale> {
  const sweeps = stores.map(() => ({
    cursor: '0',
    round: { paused: 0, held: 0 } as Swept,
    last: undefined as Swept | undefined,
  }));
  return async () => {
    const reads: AutoscaleRead[] = await Promise.all(
      stores.map((s, i) =>
        s.autoscale({
          cursor: sweeps[i].cursor,
          maxFields: sweepFields,
          maxExecutors: AUTOSCALE_MAX_EXECUTORS,
          dueWindowMs: DUE_WINDOW_MS,
        }),
      ),
    );
    const out: Autoscale = { runnable: 0, held: 0, oldestWait: 0, running: 0, dueSoon: 0, slots: 0, busySlots: 0 };
    // (an executor registers in every shard it takes from: its slots count once)
    const executors = new Map<string, Record<string, unknown>>();
    reads.forEach((r, i) => {
      const sweep = sweeps[i];
      const { round } = sweep;
      round.paused += r.pausedWaiting;
      round.held += r.heldWaiting;
      if (r.oldestStart !== undefined && (round.oldestStart === undefined || r.oldestStart < round.oldestStart))
        round.oldestStart = r.oldestStart;
      sweep.cursor = r.cursor;
      if (r.cursor === '0') {
        sweep.last = round;
        sweep.round = { paused: 0, held: 0 };
      }
      const groups = sweep.last ?? round;
      out.runnable += Math.max(0, (r.counts.waiting ?? 0) - groups.paused - groups.held);
      out.held += groups.held;
      if (groups.oldestStart !== undefined)
        out.oldestWait = Math.max(out.oldestWait, Math.max(0, r.now - groups.oldestStart) / 1000);
      out.running += r.counts.running ?? 0;
      out.dueSoon += r.dueSoon;
      for (const e of r.executors) executors.set(e.id, e.info);
    });
    for (const info of executors.values()) {
      out.slots += Number(info.concurrency) || 0;
      out.busySlots += Number(info.running) || 0;
    }
    return out;
  };
}

/**
 * Builds the registry and starts serving it on `/metrics`.
 * @throws {ValidationError} naming the first bad option; nothing is served then.
 */
export async function serveMetrics(options: MetricsOptions): Promise<MetricsServer> {
  const opts = checkOptions(METRICS_OPTIONS, options) as MetricsOptions;
  const registry = new Registry();
  const { queue } = opts;
  const maxGroups = opts.maxGroups ?? 1000;
  new Gauge({
    name: 'rota_jobs',
    help: 'Jobs per state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      for (const [state, n] of Object.entries(await queue.counts())) this.set({ queue: queue.name, state }, n);
    },
  });
  // The group gauges share one read of the groups per scrape: the registry collects its metrics
  // concurrently, so every collect starts before the first read answers and waits for that read.
  let reading: Promise<GroupInfo[]> | null = null;
  const readGroups = (): Promise<GroupInfo[]> => {
    reading ??= queue
      .groups()
      .then((groups) => groups.sort((a, b) => b.waiting - a.waiting).slice(0, maxGroups))
      .finally(() => {
        reading = null;
      });
    return reading;
  };
  /** A gauge per group of `value` (groups for which it gives undefined have none). */
  const groupGauge = (name: string, help: string, value: (g: GroupInfo) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue', 'group'],
      registers: [registry],
      async collect() {
        const groups = await readGroups();
        this.reset();
        for (const g of groups) {
          const v = value(g);
          if (v !== undefined) this.set({ queue: queue.name, group: g.group }, v);
        }
      },
    });
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

  // The autoscaling gauges share one read per scrape, as the group gauges do.
  const readAutoscale = autoscaleReader(
    shardNumbers(queue.shards).map(
      (shard) => new MetricsStore(new QueueStore(queue.client, queue.name, { maxEvents: 0, shard, shards: queue.shards })),
    ),
  );
  let autoscaling: Promise<Autoscale> | null = null;
  const queueGauge = (name: string, help: string, value: (a: Autoscale) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers: [registry],
      async collect() {
        autoscaling ??= readAutoscale().finally(() => {
          autoscaling = null;
        });
        this.set({ queue: queue.name }, value(await autoscaling));
      },
    });
  queueGauge(
    'rota_queue_runnable_jobs',
    'Waiting jobs an executor with a free slot could start now: waiting jobs not in paused groups, nor in groups at their concurrency limit or parked at their rate (summed over shards)',
    (a) => a.runnable,
  );
  queueGauge(
    'rota_queue_held_jobs',
    'Waiting jobs of groups at their concurrency limit or parked at their rate (not paused): more executors would not start them',
    (a) => a.held,
  );
  queueGauge(
    'rota_queue_oldest_runnable_wait_seconds',
    "How long the oldest runnable job has waited: from its submit, a delayed job's due time or a retry's due time (0: none)",
    (a) => a.oldestWait,
  );
  queueGauge('rota_queue_running_jobs', 'Jobs in state running (summed over shards)', (a) => a.running);
  queueGauge(
    'rota_queue_due_soon_jobs',
    "Delayed jobs and stuck jobs' retries due within the next minute, overdue ones not yet made waiting included",
    (a) => a.dueSoon,
  );
  queueGauge(
    'rota_executor_slots',
    "Run slots (concurrency) of the queue's live executors, each executor counted once",
    (a) => a.slots,
  );
  queueGauge('rota_executor_slots_busy', "Jobs the queue's live executors report running", (a) => a.busySlots);
  const wait = new Histogram({
    name: 'rota_submit_to_start_seconds',
    help: "Time from submit (or a delayed job's due time) to the start of a run, per group",
    labelNames: ['queue', 'group'],
    buckets: WAIT_BUCKETS,
    registers: [registry],
  });
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
        { queue: queue.name, group: job.group },
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
  for (const s of opts.schedulers ?? []) s.on('clockJump', countJump);
  for (const w of opts.workers ?? []) {
    w.on('clockJump', countJump);
    w.on('completed', observe);
    w.on('failed', observe);
    w.on('stuck', observe);
  }

  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end('see /metrics\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (err: Error) => res.writeHead(500).end(`${err.message}\n`),
    );
  });
  const port = await listen(server, opts.port, opts.host);
  return {
    url: `http://127.0.0.1:${port}/metrics`,
    registry,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * An optional Prometheus endpoint for executors and schedulers (prom-client): jobs by state and
 * queue depth per group and the groups' rate limits (read from Redis at scrape time),
 * submit-to-start waits per group and periodic lateness (observed from the executors' events).
 */
import { createServer, type Server } from 'node:http';
import { Gauge, Histogram, Registry } from 'prom-client';
import type { Worker } from '../executor/worker.js';
import { checkOptions, METRICS_OPTIONS } from '../options.js';
import type { Job } from '../queue/job.js';
import type { Queue } from '../queue/queue.js';
import type { GroupInfo } from '../queue/reader.js';

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
  for (const w of opts.workers ?? []) {
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  return {
    url: `http://127.0.0.1:${port}/metrics`,
    registry,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

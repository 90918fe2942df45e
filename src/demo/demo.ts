/**
 * The one-command demo: two executors and a scheduler on a local Redis (a private redis-server
 * is started when none is configured), three periodic tasks (a calendar event, a cron rule with
 * a time zone, an interval), one tenant flooding the queue while light tenants submit a few
 * jobs, a live view, and a summary showing the light tenants were served during the flood.
 */

import { type RunningRedis, startPrivateRedis } from '../dev/redis-server.js';
import { Worker } from '../executor/worker.js';
import { PeriodicTasks, Scheduler } from '../periodic/index.js';
import type { Handlers } from '../queue/context.js';
import { Queue } from '../queue/queue.js';
import { type ConnectionOption, maskUrl } from '../redis/connection.js';
import { percentile, render, type TenantView } from './view.js';

export interface DemoOptions {
  /** Redis URL, ioredis options or client (a Cluster too); when absent a private redis-server is started and stopped. */
  redis?: ConnectionOption;
  /** Stop after this many seconds (non-interactive); default: when the flood is drained, plus 5 s. */
  durationS?: number;
  /** Jobs the flooding tenant submits at once; default 4,000. */
  flood?: number;
  /** Shards of the demo's queue (a new queue each run); default 1. */
  shards?: number;
  /** Write progress here (default stdout); redraws in place when it is a terminal. */
  out?: NodeJS.WriteStream;
}

export interface DemoSummary {
  tenants: Array<{ group: string; submitted: number; done: number; waitP50?: number; waitP99?: number }>;
  periodicRuns: Record<string, number>;
  floodDrainedMs?: number;
}

const LIGHT = ['bob', 'carol', 'dave'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the demo until its duration ends or SIGINT; resolves with the summary. */
export async function runDemo(opts: DemoOptions = {}): Promise<DemoSummary> {
  const out = opts.out ?? process.stdout;
  const tty = Boolean(out.isTTY) && opts.durationS === undefined;
  let server: RunningRedis | null = null;
  let connection = opts.redis;
  if (connection === undefined || connection === '') {
    // a local redis-server, or a container where there is none; else one line saying what to do
    server = await startPrivateRedis();
    connection = server.url;
    out.write(`started a private redis-server on ${maskUrl(server.url)}\n`);
  }
  const queueName = server ? 'demo' : `demo-${Date.now().toString(36)}`;
  const shards = opts.shards;
  const queue = new Queue(queueName, { connection, shards });
  const tasks = new PeriodicTasks(queueName, { connection, shards });
  const periodicRuns = new Map<string, number>();
  const tenants = new Map<string, TenantView>();
  const tenant = (g: string) => {
    let t = tenants.get(g);
    if (!t) {
      t = { group: g, submitted: 0, done: 0, waits: [] };
      tenants.set(g, t);
    }
    return t;
  };
  const handlers: Handlers = {
    render: async ({ args, signal }) => {
      await sleep((args as { ms: number }).ms);
      if (signal.aborted) throw signal.reason;
      return 'ok';
    },
    report: async ({ log }) => log('hourly report built'),
    cleanup: async ({ log }) => log('cleaned up'),
    ping: async () => 'pong',
  };
  const workers = [1, 2].map(
    (n) => new Worker(queueName, handlers, { connection: connection!, concurrency: 8, id: `demo-executor-${n}`, shards }),
  );
  const scheduler = new Scheduler(queueName, { connection, shards });
  let stopping = false;
  const onSigint = () => {
    stopping = true;
  };
  process.once('SIGINT', onSigint);
  const started = Date.now();
  let floodDrainedMs: number | undefined;
  try {
    for (const w of workers) {
      w.on('completed', (job) => {
        if (job.tracker) periodicRuns.set(job.tracker, (periodicRuns.get(job.tracker) ?? 0) + 1);
        if (job.task !== 'render') return;
        const t = tenant(job.group);
        t.done++;
        if (job.started) t.waits.push(job.started - job.submitted);
      });
      w.on('error', () => {});
    }
    await Promise.all(workers.map((w) => w.run()));
    await tasks.upsert({ id: 'report', task: 'report', timer: '*:*:0/5', group: 'ops' });
    await tasks.upsert({ id: 'cleanup', task: 'cleanup', timer: '*/7 * * * * *', timezone: 'Europe/Paris', group: 'ops' });
    await tasks.upsert({ id: 'ping', task: 'ping', timer: 'every 3s', group: 'ops' });
    await scheduler.start();

    const flood = opts.flood ?? 4000;
    for (let i = 0; i < flood; i += 1000) {
      const n = Math.min(1000, flood - i);
      await queue.submitBulk(
        Array.from({ length: n }, () => ({ task: 'render', group: 'acme', args: { ms: 5 + Math.floor(Math.random() * 20) } })),
      );
      tenant('acme').submitted += n;
    }
    for (const g of LIGHT) tenant(g);
    const lightTimer = setInterval(() => {
      for (const g of LIGHT) {
        tenant(g).submitted++;
        void queue.submit({ task: 'render', group: g, args: { ms: 10 } }).catch(() => {});
      }
    }, 200);

    let drawn = 0;
    const draw = async () => {
      const next = await tasks.upcoming({ limit: 3 }).catch(() => []);
      const lines = render({ elapsedMs: Date.now() - started, tenants: [...tenants.values()], next, periodicRuns });
      if (tty) {
        out.write(`${drawn ? `\x1b[${drawn}A` : ''}${lines.map((l) => `${l}\x1b[K`).join('\n')}\n`);
        drawn = lines.length;
      } else {
        const acme = tenant('acme');
        const light = LIGHT.flatMap((g) => tenant(g).waits);
        out.write(
          `${((Date.now() - started) / 1000).toFixed(0)}s acme ${acme.done}/${acme.submitted}, light tenants wait p99 ${percentile(light, 99) ?? '-'} ms, periodic runs ${[...periodicRuns.values()].reduce((a, b) => a + b, 0)}\n`,
        );
      }
    };
    const deadline = opts.durationS !== undefined ? started + opts.durationS * 1000 : Infinity;
    let ticks = 0;
    while (!stopping && Date.now() < deadline) {
      await sleep(250);
      const acme = tenant('acme');
      if (floodDrainedMs === undefined && acme.done >= acme.submitted) floodDrainedMs = Date.now() - started;
      if (opts.durationS === undefined && floodDrainedMs !== undefined && Date.now() - started > floodDrainedMs + 5000) break;
      if (tty || ++ticks % 4 === 0) await draw();
    }
    clearInterval(lightTimer);
    await draw();
  } finally {
    process.off('SIGINT', onSigint);
    await scheduler.close();
    await Promise.all(workers.map((w) => w.close({ timeout: 2000 })));
    await tasks.close();
    await queue.close();
    await server?.destroy();
  }
  const summary: DemoSummary = {
    tenants: [...tenants.values()].map((t) => ({
      group: t.group,
      submitted: t.submitted,
      done: t.done,
      waitP50: percentile(t.waits, 50),
      waitP99: percentile(t.waits, 99),
    })),
    periodicRuns: Object.fromEntries(periodicRuns),
    floodDrainedMs,
  };
  return summary;
}

/** The summary as text. */
export function describeSummary(s: DemoSummary): string {
  const lines = ['', 'Summary'];
  for (const t of s.tenants) {
    lines.push(
      `  ${t.group.padEnd(6)} ${String(t.done).padStart(5)}/${t.submitted} jobs, wait p50 ${t.waitP50 ?? '-'} ms, p99 ${t.waitP99 ?? '-'} ms`,
    );
  }
  const acme = s.tenants.find((t) => t.group === 'acme');
  const light = s.tenants.filter((t) => t.group !== 'acme');
  const worst = Math.max(...light.map((t) => t.waitP99 ?? 0));
  if (acme) {
    lines.push(
      '',
      `While acme's flood of ${acme.submitted} jobs was queued${s.floodDrainedMs ? ` (drained in ${(s.floodDrainedMs / 1000).toFixed(1)} s)` : ` (${acme.done} done when stopped)`}, ` +
        `the light tenants waited at most ${worst} ms (p99): round-robin across groups served them between acme's jobs.`,
    );
  }
  lines.push(
    `Periodic runs: ${
      Object.entries(s.periodicRuns)
        .map(([k, v]) => `${k} ${v}×`)
        .join(', ') || 'none yet'
    }`,
  );
  return lines.join('\n') + '\n';
}

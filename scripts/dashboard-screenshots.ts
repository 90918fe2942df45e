/**
 * Takes the screenshots of the dashboard's pages kept in docs/screenshots/ (the README shows two).
 *
 *   npx tsx scripts/dashboard-screenshots.ts [--seconds 60]
 *
 * Starts a private redis-server, runs a small demo on it for `--seconds` (default 60: submits at
 * a varying rate, executors working through it with some failures, periodic tasks with a
 * scheduler, a paused group, a limited one and a rate-limited one, delayed jobs, a fan-out,
 * event-rule runs pending), serves the dashboard and photographs each page
 * with Debian's chromium (/usr/bin/chromium) through playwright-core.
 *
 * The photos show no path of the machine they were taken on: the handlers' errors have their
 * stacks' paths made relative to the package (`app/...`), and each page's text is checked for a
 * home or work folder before it is photographed (the script fails if one shows).
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveDashboard } from '../src/dashboard/index.js';
import { RedisServer } from '../src/dev/redis-server.js';
import { type Handlers, PeriodicTasks, Queue, Scheduler, Worker } from '../src/index.js';

const OUT = new URL('../docs/screenshots/', import.meta.url).pathname;
const at = process.argv.indexOf('--seconds');
const SECONDS = at > 0 ? Number(process.argv[at + 1]) : 60;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The package's folder, as stack traces name it (a plain path, or a file: URL). */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** A path that names the machine the photos were taken on. */
const LOCAL_PATH = /(?:^|[\s(/'"=])(?:\/work\/|\/home\/|\/Users\/|\/root\/|\/tmp\/|[A-Z]:\\)/;

/** Handlers whose errors' stacks name files relative to the package, not where it lies on this machine. */
function relativeStacks(handlers: Handlers): Handlers {
  const out: Handlers = {};
  for (const [task, handler] of Object.entries(handlers)) {
    out[task] = async (ctx) => {
      try {
        return await handler(ctx);
      } catch (err) {
        if (err instanceof Error && err.stack)
          err.stack = err.stack.replaceAll(`file://${ROOT}`, 'app/').replaceAll(ROOT, 'app/');
        throw err;
      }
    };
  }
  return out;
}

const TENANTS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark', 'wayne', 'wonka', 'tyrell', 'cyberdyne'];

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const redis = await RedisServer.start();
  const url = redis.url;
  const queue = new Queue('mail', { connection: url });
  const tasks = new PeriodicTasks('mail', { connection: url });
  await tasks.upsert({ id: 'nightly-report', task: 'report', timer: '*-*-* 04:00', timezone: 'Europe/Paris' });
  await tasks.upsert({ id: 'digest', task: 'digest', timer: 'Mon..Fri *-*-* 09:00', timezone: 'America/New_York' });
  await tasks.upsert({ id: 'heartbeat', task: 'ping', timer: 'every 5s' });
  await tasks.upsert({ id: 'cleanup', task: 'cleanup', timer: '0 */2 * * *' });
  await tasks.upsert({ id: 'flaky-sync', task: 'sync', timer: 'every 10s', timezone: 'Europe/Paris' });
  await tasks.rule({ id: 'winback', after: 'user.last_seen', delay: 'P7D', task: 'mail', group: 'marketing' });
  const scheduler = new Scheduler('mail', { connection: url });
  await scheduler.start();
  const handlers: Handlers = {
    send: async (ctx) => {
      ctx.log('rendering template');
      await sleep(20 + Math.random() * 60);
      ctx.log('handed to the mail server');
      if (Math.random() < 0.05) throw new Error('SMTP 451: try again later');
      return { accepted: true };
    },
    report: async (ctx) => {
      // a report per account: fanned out, the run ends when its children do
      await ctx.fanOut(['north', 'south', 'east', 'west'], { task: 'send', group: 'reports' });
      return { rows: 1200 };
    },
    digest: async () => ({ sent: 52 }),
    ping: async (ctx) => {
      ctx.log('pong');
      return 'ok';
    },
    cleanup: async () => ({ removed: 17 }),
    sync: async (ctx) => {
      ctx.log('fetching remote changes');
      if (Math.random() < 0.5) throw new Error('remote answered 503 Service Unavailable');
      return { changed: 3 };
    },
  };
  const workers = [0, 1].map(
    (i) => new Worker('mail', relativeStacks(handlers), { connection: url, concurrency: 8, id: `mail-worker-${i + 1}` }),
  );
  await queue.setGroupLimit('acme', { concurrency: 2, weight: 3 });
  await queue.setGroupLimit('globex', { rate: { max: 5, perMs: 1000 } });
  await queue.pauseGroup('umbrella');
  // Reminders due later (delayed jobs), and event-rule runs pending for a few users.
  await queue.submitBulk(
    Array.from({ length: 40 }, (_, k) => ({
      task: 'send',
      group: TENANTS[k % TENANTS.length],
      args: { to: `later${k}@example.com`, template: 'reminder' },
      delay: 600_000 + k * 90_000,
    })),
  );
  for (const user of ['u-1042', 'u-2210', 'u-3178']) await tasks.emit({ event: 'user.last_seen', subject: user });
  // The dashboard runs from the start, with a page open, so that its throughput series fills.
  const served = await serveDashboard({ connection: url, queues: ['mail'], port: 0 });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  await page.goto(served.url);
  const started = Date.now();
  let producing = true;
  // Submits at a rate that swings between about 5 and 75 jobs a second, until the photos are taken.
  const producer = (async () => {
    while (producing) {
      const phase = (Date.now() - started) / 1000;
      const burst = Math.round(40 + 35 * Math.sin(phase / 8));
      await queue.submitBulk(
        Array.from({ length: burst }, (_, k) => ({
          task: 'send',
          group: TENANTS[(k * 7 + Math.floor(phase)) % (k % 3 === 0 ? 3 : TENANTS.length)],
          args: { to: `user${k}@example.com`, template: 'welcome', locale: 'en' },
          priority: k % 4 === 0 ? ('high' as const) : ('low' as const),
          maxRetries: 1,
        })),
      );
      await sleep(1000);
    }
  })();
  await sleep(SECONDS * 1000);
  if (LOCAL_PATH.test((await page.textContent('body')) ?? '')) throw new Error('overview: the page shows a local path');
  await page.screenshot({ path: `${OUT}overview.png`, fullPage: true });
  process.stdout.write(`${OUT}overview.png\n`);
  // A backlog to show in the groups page.
  await queue.submitBulk(
    Array.from({ length: 3000 }, (_, k) => ({ task: 'send', group: TENANTS[k % 5], args: { to: `late${k}@example.com` } })),
  );
  const [failed] = await queue.jobs({ state: 'failed', limit: 1 });
  const parent = await queue.submit({ task: 'report', group: 'reports', args: { month: '2026-10' } });
  // A job of the paused group: its page says why it waits.
  const held = await queue.submit({ task: 'send', group: 'umbrella', args: { to: 'ops@example.com', template: 'invoice' } });
  const shots: Array<[string, string]> = [
    ['groups', 'groups'],
    ['jobs', 'jobs?state=failed'],
    ['jobs-delayed', 'jobs?state=delayed'],
    ['job', failed ? `jobs/${failed.id}` : 'jobs'],
    ['job-fanout', `jobs/${parent.id}`],
    ['job-waiting', `jobs/${held.id}`],
    ['executors', 'executors'],
    ['redis', 'redis'],
    ['periodic', 'periodic'],
    ['periodic-task', 'periodic/flaky-sync'],
  ];
  for (const [name, path] of shots) {
    await page.goto(served.url + path);
    await sleep(1500);
    const local = LOCAL_PATH.exec((await page.textContent('body')) ?? '');
    if (local) throw new Error(`${name}: the page shows a local path (near "${local[0]}"): it must not be photographed`);
    await page.screenshot({ path: `${OUT}${name}.png`, fullPage: !['jobs', 'groups', 'jobs-delayed'].includes(name) });
    process.stdout.write(`${OUT}${name}.png\n`);
  }
  producing = false;
  await producer;
  await browser.close();
  await served.close();
  await scheduler.close();
  await Promise.all(workers.map((w) => w.close()));
  await queue.close();
  await tasks.close();
  await redis.destroy();
}

await main();

/**
 * Health: worker.health() and the /readyz and /livez endpoints, against real processes and real
 * faults (a stopped Redis server, SIGTERM with a job in flight, a wedged take loop).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { type HealthServer, serveHealth } from '../../src/observability/health.js';
import { STALL_AFTER_MS } from '../../src/util/health.js';
import { cliEntry, rota } from '../helpers/cli.js';
import { RedisServer } from '../helpers/redis-server.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

/** The status /readyz or /livez answers now (0 when nothing answers). */
async function status(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 0;
  }
}

describe('health under Redis faults (a server of its own)', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    if (server?.pid) process.kill(server.pid, 'SIGCONT');
    await server?.destroy();
  });

  it('turns not ready within seconds of SIGSTOP, and ready again after SIGCONT', async () => {
    const name = uniqueQueue('health');
    const worker = new Worker(name, { noop: () => undefined }, { connection: server.url, leaseMs: 1500 });
    open.push(worker);
    worker.on('error', () => {});
    await worker.run();
    const health: HealthServer = await serveHealth({ port: 0, host: '127.0.0.1', check: () => worker.health() });
    open.push(health);
    expect(await eventually(async () => (await status(`${health.url}/readyz`)) === 200, 10_000)).toBe(true);
    expect(await status(`${health.url}/livez`)).toBe(200);

    const pid = server.pid as number;
    process.kill(pid, 'SIGSTOP');
    const stopped = performance.now();
    try {
      await eventually(async () => (await status(`${health.url}/readyz`)) === 503, 15_000);
      const toNotReady = performance.now() - stopped;
      const body = (await (await fetch(`${health.url}/readyz`)).json()) as {
        ready: boolean;
        checks: Record<string, { ok: boolean; detail: string }>;
      };
      expect(body.ready).toBe(false);
      expect(body.checks.shards.ok).toBe(false);
      expect(body.checks.shards.detail).toMatch(/shard 0: no answer for/);
      // A stopped Redis is not a wedged process.
      expect(await status(`${health.url}/livez`)).toBe(200);
      process.kill(pid, 'SIGCONT');
      const resumed = performance.now();
      await eventually(async () => (await status(`${health.url}/readyz`)) === 200, 15_000);
      console.log(
        `health probe timings: not ready ${Math.round(toNotReady)} ms after SIGSTOP, ready ${Math.round(performance.now() - resumed)} ms after SIGCONT (leaseMs 1500)`,
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });

  it('recovers after CLIENT KILL of its blocking connection: ready again, and it takes the next job', async () => {
    const name = uniqueQueue('health');
    const worker = new Worker(name, { echo: ({ args }) => args }, { connection: server.url, fallbackWakeMs: 1000 });
    open.push(worker);
    worker.on('error', () => {});
    await worker.run();
    await eventually(async () => worker.health().ready, 10_000);
    const admin = new Redis(server.url);
    try {
      // The executor's blocking call on the shard's wake-up marker (the only one on this server).
      const blocked = await eventually(async () => {
        const list = (await admin.client('LIST')) as string;
        return list
          .split('\n')
          .filter((l) => / cmd=bzpopmin /.test(l))
          .map((l) => /^id=(\d+)/.exec(l)?.[1])[0];
      }, 10_000);
      await admin.client('KILL', 'ID', blocked);
      const queue = new Queue(name, { connection: server.url });
      open.push(queue);
      const job = await queue.submit({ task: 'echo', args: { n: 1 } });
      await eventually(async () => (await queue.getJob(job.id))?.state === 'success', 20_000);
      const h = await eventually(async () => {
        const now = worker.health();
        return now.ready && now.live && now;
      }, 10_000);
      expect(h.checks.connections.ok).toBe(true);
    } finally {
      admin.disconnect();
    }
  });
});

describe('worker.health()', () => {
  it('stays live and ready on an idle executor across several fallback wake-ups', async () => {
    const name = uniqueQueue('health');
    const worker = new Worker(name, { noop: () => undefined }, { connection: redisUrl(), fallbackWakeMs: 1000, leaseMs: 3000 });
    open.push(worker);
    await worker.run();
    await eventually(async () => worker.health().ready, 10_000);
    const until = Date.now() + 4500;
    let probes = 0;
    while (Date.now() < until) {
      const h = worker.health();
      expect(h, JSON.stringify(h.checks)).toMatchObject({ live: true, ready: true });
      probes++;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(probes).toBeGreaterThan(10);
    expect(Object.keys(worker.health().checks).sort()).toEqual(
      ['closing', 'connections', 'eventLoop', 'registered', 'shards', 'started', 'takeLoop'].sort(),
    );
  });

  it('is not ready before it starts, and not ready from the moment close() begins', async () => {
    const name = uniqueQueue('health');
    const worker = new Worker(name, { noop: () => undefined }, { connection: redisUrl(), autorun: false });
    expect(worker.health().ready).toBe(false);
    expect(worker.health().checks.started.ok).toBe(false);
    expect(worker.health().live).toBe(true);
    await worker.run();
    await eventually(async () => worker.health().ready, 10_000);
    const closed = worker.close();
    expect(worker.health().ready).toBe(false);
    expect(worker.health().checks.closing).toEqual({ ok: false, detail: 'shutting down' });
    await closed;
  });

  it('turns live false when the take loop is wedged', async () => {
    const name = uniqueQueue('health');
    const worker = new Worker(name, { noop: () => undefined }, { connection: redisUrl() });
    open.push(worker);
    await worker.run();
    await eventually(async () => worker.health().live && worker.health().ready, 10_000);
    // As a loop wedged for longer than the stall limit would leave it.
    worker.setLoopProgressForTest(performance.now() - STALL_AFTER_MS - 1000);
    const h = worker.health();
    expect(h.live, JSON.stringify(h.checks)).toBe(false);
    expect(h.checks.takeLoop.ok).toBe(false);
    expect(h.checks.takeLoop.detail).toMatch(/last iteration \d+ ms ago/);
    expect(h.checks.eventLoop.ok).toBe(true);
  });

  it('takes its stall limit from stallAfterMs, never below 3 fallback periods, and refuses a bad one', async () => {
    const name = uniqueQueue('health');
    const worker = new Worker(
      name,
      { noop: () => undefined },
      { connection: redisUrl(), stallAfterMs: 5000, fallbackWakeMs: 1000 },
    );
    open.push(worker);
    await worker.run();
    await eventually(async () => worker.health().live && worker.health().ready, 10_000);
    worker.setLoopProgressForTest(performance.now() - 6000);
    const h = worker.health();
    expect(h.live).toBe(false);
    expect(h.checks.takeLoop.detail).toMatch(/limit 5000 ms/);
    const floored = new Worker(
      name,
      { noop: () => undefined },
      { connection: redisUrl(), stallAfterMs: 1000, fallbackWakeMs: 2000, autorun: false },
    );
    open.push(floored);
    expect(floored.health().checks.takeLoop.detail).toMatch(/limit 6000 ms/);
    expect(() => new Worker(name, { noop: () => undefined }, { connection: redisUrl(), stallAfterMs: 10 })).toThrow(
      ValidationError,
    );
    const bad = await rota(['--redis', redisUrl(), '--queue', name, 'worker', '--tasks', 'x.mjs', '--stall-after', '10']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--stall-after must be a whole number from 1000 to 86400000/);
  });
});

describe('rota worker --health-port', () => {
  it('rejects a bad port with the usage of a bad value', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('health')];
    const bad = await rota([...q, 'worker', '--tasks', 'x.mjs', '--health-port', '70000']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--health-port must be a whole number from 0 to 65535/);
  });

  it('answers /readyz 503 at once on SIGTERM, then exits 0 once the job in flight ends', async () => {
    const name = uniqueQueue('health');
    const q = ['--redis', redisUrl(), '--queue', name];
    const dir = mkdtempSync(join(tmpdir(), 'rota-health-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const tasks = join(dir, 'tasks.mjs');
    const gate = join(dir, 'gate');
    writeFileSync(
      tasks,
      [
        "import { existsSync } from 'node:fs';",
        'export default { hold: async ({ args }) => {',
        '  while (!existsSync(args.gate)) await new Promise((r) => setTimeout(r, 20));',
        "  return 'released';",
        '} };',
        '',
      ].join('\n'),
    );
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    const job = await queue.submit({ task: 'hold', args: { gate } });
    const child: ChildProcess = spawn(
      process.execPath,
      [...cliEntry(), ...q, 'worker', '--tasks', tasks, '--health-port', '0', '--shutdown-timeout', '60000'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const url = await eventually(
        async () => /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"serving health"/.exec(out)?.[1],
        30_000,
      );
      await eventually(async () => (await status(`${url}/readyz`)) === 200, 20_000);
      await eventually(async () => (await queue.getJob(job.id))?.state === 'running', 20_000);

      child.kill('SIGTERM');
      await eventually(async () => (await status(`${url}/readyz`)) === 503, 10_000);
      // The job is still in flight: the process waits for it.
      expect(existsSync(gate)).toBe(false);
      expect(child.exitCode).toBe(null);
      expect((await queue.getJob(job.id))?.state).toBe('running');
      const body = (await (await fetch(`${url}/readyz`)).json()) as { checks: Record<string, { ok: boolean }> };
      expect(body.checks.closing.ok).toBe(false);
      expect(await status(`${url}/livez`)).toBe(200);

      writeFileSync(gate, '');
      expect(await exited).toBe(0);
      expect(await queue.getJob(job.id)).toMatchObject({ state: 'success', result: 'released' });
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe('scheduler.health()', () => {
  it('is ready once started, with its replica heartbeat, and not ready from the moment close() begins', async () => {
    const scheduler = new Scheduler(uniqueQueue('health'), { connection: redisUrl() });
    expect(scheduler.health()).toMatchObject({ ready: false, live: true });
    await scheduler.start();
    const h = await eventually(async () => {
      const now = scheduler.health();
      return now.ready && now;
    }, 10_000);
    expect(h.live).toBe(true);
    expect(h.checks.replica.detail).toMatch(/replica heartbeat: answered \d+ ms ago/);
    expect(Object.keys(h.checks).sort()).toEqual(['closing', 'connections', 'eventLoop', 'loop', 'replica', 'started']);
    const closed = scheduler.close();
    expect(scheduler.health().ready).toBe(false);
    await closed;
  });
});

describe('rota scheduler and rota dashboard --health-port', () => {
  /** Spawns `rota ...args`, resolves the health URL it prints (matched by `line`), and its exit. */
  async function start(
    args: string[],
    line: RegExp,
  ): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null> }> {
    const child = spawn(process.execPath, [...cliEntry(), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const url = await eventually(async () => line.exec(out)?.[1], 30_000);
    return { child, url, exited };
  }

  it('serves /readyz and /livez for a scheduler replica, and exits 0 on SIGTERM', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('health')];
    const s = await start(
      [...q, 'scheduler', '--health-port', '0'],
      /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"serving health"/,
    );
    try {
      await eventually(async () => (await status(`${s.url}/readyz`)) === 200, 20_000);
      const body = (await (await fetch(`${s.url}/livez`)).json()) as { live: boolean; checks: Record<string, unknown> };
      expect(body.live).toBe(true);
      expect(Object.keys(body.checks)).toContain('replica');
      expect((await fetch(`${s.url}/other`)).status).toBe(404);
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });

  it('serves /readyz for the dashboard: ready while its Redis connection is', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('health')];
    const d = await start(
      [...q, 'dashboard', '--port', '0', '--health-port', '0'],
      /health on (http:\/\/127\.0\.0\.1:\d+)\/readyz/,
    );
    try {
      await eventually(async () => (await status(`${d.url}/readyz`)) === 200, 20_000);
      const body = (await (await fetch(`${d.url}/readyz`)).json()) as { ready: boolean; checks: Record<string, { ok: boolean }> };
      expect(body).toMatchObject({ ready: true, live: true, checks: { redis: { ok: true }, closing: { ok: true } } });
      d.child.kill('SIGTERM');
      expect(await d.exited).toBe(0);
    } finally {
      if (d.child.exitCode === null) d.child.kill('SIGKILL');
    }
    const bad = await rota([...q, 'dashboard', '--health-port', 'x']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--health-port must be a whole number from 0 to 65535/);
  });
});

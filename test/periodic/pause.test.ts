/**
 * Pause with a note and pause on failure (`disable(id, { note })`, `pauseOnFailure`), and the
 * buffer-all overlap policy of a task: in get(), the CLI, the dashboard and the events.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { serveDashboard } from '../../src/dashboard/index.js';
import { PeriodicTasks, Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { rota } from '../helpers/cli.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { closeAll, eventually, rawClient, redisUrl, streamEvents, track, uniqueQueue } from '../helpers/setup.js';
import { sleep } from '../helpers/wait.js';

afterEach(closeAll);

function setup() {
  const name = uniqueQueue('pause');
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
  const queue = track(new Queue(name, { connection: redisUrl() }));
  return { name, tasks, queue };
}

describe('pause with a note', () => {
  it('disable(id, { note }): the note shows in get(), rota periodic list and the dashboard (escaped); enable clears it', async () => {
    const { name, tasks } = setup();
    await tasks.upsert({ id: 'n', task: 'n', timer: 'hourly' });
    const note = 'maintenance <b>until</b> 10:00 & later';
    expect(await tasks.disable('n', { note })).toBe(true);
    expect(await tasks.get('n')).toMatchObject({ enabled: false, note });
    const args = ['--redis', redisUrl(), '--queue', name];
    const list = await rota([...args, 'periodic', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/NOTE/);
    expect(list.stdout).toContain(note);
    // rota periodic add's flags
    const added = await rota([
      ...args,
      'periodic',
      'add',
      'x',
      'x',
      'hourly',
      '--pause-on-failure',
      '--overlap',
      'buffer-all',
      '--json',
    ]);
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ id: 'x', pauseOnFailure: true, overlap: 'buffer-all' });
    expect(await tasks.get('x')).toMatchObject({ pauseOnFailure: true, overlap: 'buffer-all' });
    // the CLI's own disable --note
    expect(await rota([...args, 'periodic', 'disable', 'n', '--note', 'from the CLI'])).toMatchObject({ code: 0 });
    expect((await tasks.get('n'))!.note).toBe('from the CLI');
    await tasks.disable('n', { note });
    // a backfill's run, marked in the history
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    expect(await tasks.backfill('n', { from: hour - 3_600_000, to: hour, overlap: 'allow' })).toMatchObject({ submitted: 1 });
    const served = track(await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 }));
    const { get } = dashboardClient(() => served.url);
    const escaped = 'maintenance &lt;b&gt;until&lt;/b&gt; 10:00 &amp; later';
    const row = /<tr data-task="n">([\s\S]*?)<\/tr>/.exec((await get('/periodic')).body)![1];
    expect(row).toContain(escaped);
    const page = await get('/periodic/n');
    expect(page.body).toContain(`<td class="note">${escaped}</td>`);
    expect(page.body).not.toContain('<b>until</b>');
    expect(textOf(page.body)).toMatch(/waiting backfill/);
    const runs = await rota([...args, 'periodic', 'runs', 'n']);
    expect(runs.stdout).toContain('waiting (backfill)');
    await tasks.enable('n');
    expect((await tasks.get('n'))!.note).toBeUndefined();
    // an upsert that enables the task clears it too; one that keeps it disabled keeps it
    await tasks.disable('n', { note: 'again' });
    await tasks.upsert({ id: 'n', task: 'n', timer: 'hourly', enabled: false });
    expect((await tasks.get('n'))!.note).toBe('again');
    await tasks.upsert({ id: 'n', task: 'n', timer: 'hourly' });
    expect(await tasks.get('n')).toMatchObject({ enabled: true });
    expect((await tasks.get('n'))!.note).toBeUndefined();
  });

  it('refuses a bad note or pauseOnFailure with a ValidationError naming the field, and writes nothing', async () => {
    const { tasks } = setup();
    await tasks.upsert({ id: 'v', task: 'v', timer: 'hourly' });
    for (const [opts, field] of [
      [{ note: 5 }, 'note'],
      [{ note: 'x'.repeat(1001) }, 'note'],
      [{ reason: 'x' }, 'reason'],
    ] as const) {
      const err = await tasks.disable('v', opts as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    expect(await tasks.get('v')).toMatchObject({ enabled: true });
    const err = await tasks
      .upsert({ id: 'w', task: 'w', timer: 'hourly', pauseOnFailure: 'yes' as never })
      .catch((e: unknown) => e);
    expect((err as ValidationError).field).toBe('pauseOnFailure');
    expect(await tasks.get('w')).toBeNull();
    const overlap = await tasks
      .upsert({ id: 'w', task: 'w', timer: 'hourly', overlap: 'buffer-some' as never })
      .catch((e: unknown) => e);
    expect((overlap as ValidationError).field).toBe('overlap');
  });
});

describe('pauseOnFailure', () => {
  it('a run that fails for good disables the task, with a note naming the run, and raises periodic.paused', async () => {
    const { name, tasks } = setup();
    await tasks.upsert({ id: 'f', task: 'boom', timer: 'every 1s', pauseOnFailure: true, overlap: 'allow' });
    await tasks.upsert({ id: 'ok', task: 'boom', timer: 'every 1s', overlap: 'allow' }); // fails, not paused
    expect((await tasks.get('f'))!.pauseOnFailure).toBe(true);
    track(
      new Worker(
        name,
        {
          boom: () => {
            throw new Error('disk full');
          },
        },
        { connection: redisUrl() },
      ),
    );
    await track(new Scheduler(name, { connection: redisUrl() })).start();
    const paused = await eventually(async () => (await streamEvents(name)).find((e) => e.event === 'periodic.paused'), 15_000);
    expect(paused.periodic?.task).toBe('f');
    expect(paused.id).toBe(`f@${paused.periodic?.occurrence}`);
    const t = (await tasks.get('f'))!;
    expect(t.enabled).toBe(false);
    expect(t.note).toBe(`paused: run ${paused.id} failed: Error: disk full`);
    expect(paused.error).toBe(t.note);
    const runs = await tasks.runs('f');
    expect(runs.find((r) => r.jobId === paused.id)?.status).toBe('failed');
    // paused: out of p:nextrun, nothing of it staged
    const c = rawClient();
    try {
      expect(await c.zscore(tasks.keys.nextrun, 'f')).toBeNull();
      expect((await c.zrange(tasks.keys.staged, 0, -1)).filter((m) => m.slice(1).startsWith('f@'))).toEqual([]);
      expect(await c.zscore(tasks.keys.nextrun, 'ok')).not.toBeNull();
    } finally {
      c.disconnect();
    }
    // the task without pauseOnFailure keeps running and failing
    await eventually(async () => (await tasks.runs('ok')).filter((r) => r.status === 'failed').length >= 2, 15_000);
    expect((await tasks.get('ok'))!.enabled).toBe(true);
    expect((await streamEvents(name)).filter((e) => e.event === 'periodic.paused')).toHaveLength(1);
  });

  it('a run with retries pauses the task only once they are used up', async () => {
    const { name, tasks } = setup();
    await tasks.upsert({ id: 'r', task: 'flaky', timer: 'hourly', pauseOnFailure: true, maxRetries: 1 });
    let calls = 0;
    track(
      new Worker(
        name,
        {
          flaky: () => {
            calls += 1;
            throw new Error(`attempt ${calls}`);
          },
        },
        { connection: redisUrl(), retryDelay: 50 },
      ),
    );
    await track(new Scheduler(name, { connection: redisUrl() })).start();
    const { jobId } = (await tasks.trigger('r'))!;
    const paused = await eventually(async () => (await streamEvents(name)).find((e) => e.event === 'periodic.paused'), 15_000);
    expect(paused.id).toBe(jobId);
    expect(calls).toBe(2);
    expect((await tasks.get('r'))!.note).toBe(`paused: run ${jobId} failed: Error: attempt 2`);
  });
});

describe('pauseOnFailure and a buffer-all backfill', () => {
  it('a failed backfill run pauses the task and the rest of the backlog waits; enable resumes it', async () => {
    const { name, tasks } = setup();
    await tasks.upsert({ id: 'bp', task: 'step', timer: 'hourly', pauseOnFailure: true });
    const H = 3_600_000;
    const to = Math.floor(Date.now() / H) * H;
    const from = to - 6 * H;
    const ran: number[] = [];
    track(
      new Worker(
        name,
        {
          step: (ctx) => {
            ran.push(ctx.job.occurrence!);
            if (ctx.job.occurrence === from + 2 * H && !ctx.job.id.includes('#')) throw new Error('bad hour');
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    await track(new Scheduler(name, { connection: redisUrl(), bufferPollMs: 100 })).start();
    expect(await tasks.backfill('bp', { from, to })).toMatchObject({ submitted: 6 });
    const paused = await eventually(async () => (await streamEvents(name)).find((e) => e.event === 'periodic.paused'), 15_000);
    expect(paused.id).toBe(`bp@${from + 2 * H}`);
    // the failure and the pause are one call: no later run of the backlog was submitted
    const c = rawClient();
    try {
      expect(await c.zcard(`{rota:${name}}:p:bq:bp`)).toBe(3);
    } finally {
      c.disconnect();
    }
    expect(ran).toEqual([from, from + H, from + 2 * H]);
    await tasks.enable('bp');
    await eventually(async () => ran.length === 6, 15_000);
    expect(ran).toEqual(Array.from({ length: 6 }, (_, k) => from + k * H));
  });
});

describe('buffer-all', () => {
  it('a task with overlap buffer-all runs every occurrence, one after another, in order', async () => {
    const { name, tasks } = setup();
    await tasks.upsert({ id: 'b', task: 'slow', timer: 'every 1s', overlap: 'buffer-all', maxRuntime: 10_000 });
    let running = 0;
    let most = 0;
    const order: number[] = [];
    track(
      new Worker(
        name,
        {
          slow: async (ctx) => {
            running += 1;
            most = Math.max(most, running);
            order.push(ctx.job.occurrence!);
            await sleep(1500);
            running -= 1;
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    await track(new Scheduler(name, { connection: redisUrl(), bufferPollMs: 100 })).start();
    // runs of 1.5 s on a 1 s timer: a backlog builds, and nothing is skipped
    await eventually(async () => order.length >= 4, 20_000);
    await tasks.disable('b');
    expect(most).toBe(1);
    const sorted = [...order].sort((a, b) => a - b);
    expect(order).toEqual(sorted);
    for (let i = 1; i < order.length; i++) expect(order[i] - order[i - 1]).toBe(1000);
    const runs = await tasks.runs('b', { limit: 100 });
    expect(runs.filter((r) => r.status === 'skipped' || r.status === 'missed')).toEqual([]);
  });
});

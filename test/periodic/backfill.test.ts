import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { rota } from '../helpers/cli.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';
import { sleep } from '../helpers/wait.js';

afterEach(closeAll);
const H = 3_600_000;
const FIXTURE = new URL('../fixtures/backfill.ts', import.meta.url).pathname;

function setup() {
  const name = uniqueQueue('bf');
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
  const queue = track(new Queue(name, { connection: redisUrl() }));
  return { name, tasks, queue, prefix: `{rota:${name}}:` };
}

/** The last `n` whole hours before now: [from, to). */
function hours(n: number): { from: number; to: number } {
  const to = Math.floor(Date.now() / H) * H;
  return { from: to - n * H, to };
}

describe('backfill', () => {
  it('buffer-all: 24 hourly occurrences run, in order, never two at once (two replicas), each recorded as a backfill', async () => {
    const { name, tasks } = setup();
    await tasks.upsert({ id: 'h', task: 'h', timer: 'hourly' });
    const order: number[] = [];
    let running = 0;
    let most = 0;
    track(
      new Worker(
        name,
        {
          h: async (ctx) => {
            running += 1;
            most = Math.max(most, running);
            order.push(ctx.job.occurrence!);
            await sleep(30);
            running -= 1;
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    // two replicas release the backlog
    for (const id of ['s1', 's2']) await track(new Scheduler(name, { connection: redisUrl(), id, bufferPollMs: 100 })).start();
    const { from, to } = hours(24);
    const r = await tasks.backfill('h', { from, to, overlap: 'buffer-all' });
    expect(r).toEqual({ occurrences: 24, submitted: 24, alreadyRan: 0 });
    await eventually(
      async () => (await tasks.runs('h', { limit: 100 })).filter((x) => x.status === 'success').length === 24,
      30_000,
    );
    expect(most).toBe(1);
    expect(order).toEqual(Array.from({ length: 24 }, (_, k) => from + k * H));
    const runs = await tasks.runs('h', { limit: 100 });
    expect(runs.filter((x) => x.backfill && x.jobId === `h@${x.occurrence}`)).toHaveLength(24);
    // and the runs' spans do not overlap
    const spans = runs.map((x) => [x.started!, x.finished!]).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i][0]).toBeGreaterThanOrEqual(spans[i - 1][1]);
  });

  it.each(['allow', 'buffer-all'] as const)(
    'two overlapping backfills (%s) started at once from two processes submit each occurrence once',
    async (overlap) => {
      const { name, tasks, queue, prefix } = setup();
      await tasks.upsert({ id: 'p', task: 'p', timer: '*-*-* *:*:00' }); // every minute
      const M = 60_000;
      const to = Math.floor(Date.now() / M) * M;
      // A: the last 3,000 minutes; B: minutes 1,000 to 4,000 back: 2,000 shared
      const a = new NodeProcess(FIXTURE, [redisUrl(), name, 'p', String(to - 3000 * M), String(to), overlap]);
      const b = new NodeProcess(FIXTURE, [redisUrl(), name, 'p', String(to - 4000 * M), String(to - 1000 * M), overlap]);
      try {
        await Promise.all([a.waitFor((m) => m.ready), b.waitFor((m) => m.ready)]);
        a.send({ go: true });
        b.send({ go: true });
        type R = { result: { occurrences: number; submitted: number; alreadyRan: number } };
        const [ra, rb] = await Promise.all([a.waitFor<R>((m) => m.result, 60_000), b.waitFor<R>((m) => m.result, 60_000)]);
        expect(ra.result.occurrences).toBe(3000);
        expect(rb.result.occurrences).toBe(3000);
        // 4,000 distinct occurrences: submitted once in all, the shared ones left out by one of the two
        expect(ra.result.submitted + rb.result.submitted).toBe(4000);
        expect(ra.result.alreadyRan + rb.result.alreadyRan).toBe(2000);
        const c = rawClient();
        try {
          // allow: submitted; buffer-all: in the backlog (no replica runs), each once
          if (overlap === 'allow') expect((await queue.counts()).waiting).toBe(4000);
          else expect(await c.zcard(`${prefix}p:bq:p`)).toBe(4000);
          expect(await c.zcard(`${prefix}p:h:p`)).toBe(4000);
          const ledger = await c.hvals(`${prefix}p:bf:p`);
          expect(ledger).toHaveLength(4000);
          expect(new Set(ledger)).toEqual(new Set(['1']));
        } finally {
          c.disconnect();
        }
      } finally {
        await Promise.all([a.kill(), b.kill()]);
      }
    },
  );

  it('leaves out occurrences that already ran (by the scheduler or a backfill) unless force', async () => {
    const { name, tasks, queue } = setup();
    await tasks.upsert({ id: 's', task: 's', timer: '*-*-* *:*:*', overlap: 'allow' }); // every second
    const start = Math.ceil(Date.now() / 1000) * 1000;
    const s = track(new Scheduler(name, { connection: redisUrl() }));
    await s.start();
    const scheduled = await eventually(async () => {
      const runs = (await tasks.runs('s', { limit: 100 })).filter((r) => r.jobId && r.occurrence >= start);
      return runs.length >= 2 ? runs : null;
    });
    await tasks.disable('s');
    const to = Math.max(...scheduled.map((r) => r.occurrence)) + 1;
    const from = start - 5000;
    const ranBefore = (await tasks.runs('s', { limit: 100 })).filter((r) => r.jobId && r.occurrence >= from && r.occurrence < to);
    const first = await tasks.backfill('s', { from, to, overlap: 'allow' });
    const total = Math.round((to - 1 - from) / 1000) + 1;
    expect(first).toEqual({ occurrences: total, submitted: total - ranBefore.length, alreadyRan: ranBefore.length });
    const again = await tasks.backfill('s', { from, to, overlap: 'allow' });
    expect(again).toEqual({ occurrences: total, submitted: 0, alreadyRan: total });
    const before = (await queue.counts()).waiting;
    const forced = await tasks.backfill('s', { from, to, overlap: 'allow', force: true });
    expect(forced).toEqual({ occurrences: total, submitted: total, alreadyRan: 0 });
    expect((await queue.counts()).waiting).toBe(before + total);
    // a forced rerun is a job of its own, `<id>@<occurrence>#<n>`, in the history as a backfill
    const reruns = (await tasks.runs('s', { limit: 200 })).filter((r) => r.jobId?.includes('#'));
    expect(reruns).toHaveLength(total);
    for (const r of reruns) {
      expect(r.backfill).toBe(true);
      expect(r.jobId).toMatch(new RegExp(`^s@${r.occurrence}#2$`));
    }
  });

  it('a backfill of 10,000 occurrences killed with kill -9, then run again, submits each occurrence once', async () => {
    const { name, tasks, queue, prefix } = setup();
    await tasks.upsert({ id: 'k', task: 'k', timer: '*-*-* *:*:00' });
    const M = 60_000;
    const to = Math.floor(Date.now() / M) * M;
    const from = to - 10_000 * M;
    const child = new NodeProcess(FIXTURE, [redisUrl(), name, 'k', String(from), String(to), 'allow']);
    const c = rawClient();
    try {
      await child.waitFor((m) => m.ready);
      child.send({ go: true });
      // killed part-way: some batches committed, not all
      await eventually(async () => (await c.hlen(`${prefix}p:bf:k`)) >= 1000, 30_000);
      await child.kill();
      const atKill = await c.hlen(`${prefix}p:bf:k`);
      expect(atKill).toBeLessThan(10_000);
      const rerun = await tasks.backfill('k', { from, to, overlap: 'allow' });
      expect(rerun).toEqual({ occurrences: 10_000, submitted: 10_000 - atKill, alreadyRan: atKill });
      expect((await queue.counts()).waiting).toBe(10_000);
      const ledger = await c.hvals(`${prefix}p:bf:k`);
      expect(ledger).toHaveLength(10_000);
      expect(new Set(ledger)).toEqual(new Set(['1']));
      expect(await c.zcard(`${prefix}p:h:k`)).toBe(10_000);
    } finally {
      await child.kill();
      c.disconnect();
    }
  });

  it("an occurrence in a buffer-all backlog that the scheduler's catch-up stages too is submitted once", async () => {
    const name = uniqueQueue('bf-race');
    let clock = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    const now = () => clock;
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    const t0 = clock;
    await tasks.upsert({ id: 'r', task: 'r', timer: '*-*-* *:*:*', overlap: 'allow', catchup: 'all', catchupWindow: 60_000 });
    clock = t0 + 10_000;
    // the backfill queues t0+1s .. t0+9s (planned jobs r@<occurrence>) while no scheduler runs
    expect(await tasks.backfill('r', { from: t0 + 1000, to: t0 + 10_000, overlap: 'buffer-all' })).toMatchObject({
      submitted: 9,
    });
    // a replica comes up: its catch-up plans the same occurrences (and t0+10s)
    const s = track(new Scheduler(name, { connection: redisUrl(), now, bufferPollMs: 100 }));
    await s.start();
    await eventually(async () => (await queue.counts()).waiting >= 10);
    // the backlog's turns come and go without submitting any of them again
    const c = rawClient();
    try {
      await eventually(async () => (await c.zcard(`{rota:${name}}:p:bq:r`)) === 0);
    } finally {
      c.disconnect();
    }
    await tasks.disable('r');
    const jobs = await queue.jobs({ state: 'waiting', limit: 100 });
    expect(jobs.map((j) => j.id).sort()).toEqual(Array.from({ length: 10 }, (_, k) => `r@${t0 + (k + 1) * 1000}`).sort());
    expect((await queue.counts()).waiting).toBe(10);
  });

  it('rota periodic backfill: submits the range, then finds it run; a bad range and an unknown task are refused', async () => {
    const { name, tasks, queue } = setup();
    await tasks.upsert({ id: 'c', task: 'c', timer: 'hourly' });
    const { from, to } = hours(3);
    const args = ['--redis', redisUrl(), '--queue', name, 'periodic', 'backfill'];
    const range = ['--from', new Date(from).toISOString(), '--to', new Date(to).toISOString()];
    const first = await rota([...args, 'c', ...range, '--overlap', 'allow', '--json']);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ occurrences: 3, submitted: 3, alreadyRan: 0 });
    const again = await rota([...args, 'c', ...range, '--overlap', 'allow']);
    expect(again.stdout).toBe('c: 3 occurrences, 0 submitted, 3 had run already\n');
    expect((await queue.counts()).waiting).toBe(3);
    const bad = await rota([...args, 'c', '--from', new Date(to).toISOString(), '--to', new Date(from).toISOString()]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/to: must be after from/);
    expect((await rota([...args, 'nope', ...range])).code).toBe(4);
    expect((await rota([...args, 'c', '--from', 'soon', '--to', new Date(to).toISOString()])).code).not.toBe(0);
  });

  it('refuses bad options with a ValidationError naming the field, and writes nothing', async () => {
    const { tasks, prefix } = setup();
    await tasks.upsert({ id: 'v', task: 'v', timer: 'hourly' });
    const { from, to } = hours(2);
    const bad: Array<[unknown, string]> = [
      [{ from, to: Date.now() + H }, 'to'],
      [{ from: to, to: from }, 'to'],
      [{ from: 'yesterday', to }, 'from'],
      [{ from, to, overlap: 'skip' }, 'overlap'],
      [{ from, to, force: 'yes' }, 'force'],
      [{ from, to, extra: 1 }, 'extra'],
    ];
    for (const [opts, field] of bad) {
      const err = await tasks.backfill('v', opts as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(opts)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    expect(await tasks.backfill('nope', { from, to })).toBeNull();
    const c = rawClient();
    try {
      expect(await c.exists(`${prefix}p:bf:v`, `${prefix}p:bq:v`, `${prefix}p:h:v`)).toBe(0);
    } finally {
      c.disconnect();
    }
  });
});

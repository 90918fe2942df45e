import { afterEach, describe, expect, it } from 'vitest';
import { type PeriodicTaskDefinition, PeriodicTasks, Queue, Scheduler, Worker } from '../../src/index.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = eventually;

function setup(now?: () => number) {
  const name = uniqueQueue('pol');
  const tasks = new PeriodicTasks(name, { connection: redisUrl(), now });
  const queue = new Queue(name, { connection: redisUrl() });
  track(tasks);
  track(queue);
  const scheduler = (opts: Partial<ConstructorParameters<typeof Scheduler>[1]> = {}) => {
    const s = new Scheduler(name, { connection: redisUrl(), now, ...opts });
    track(s);
    return s;
  };
  return { name, tasks, queue, scheduler };
}

describe('overlap', () => {
  it('skip: a 3 s job on a 1 s timer never has two runs at once, and skipped occurrences are recorded', async () => {
    const { name, tasks, scheduler } = setup();
    let running = 0;
    let most = 0;
    const w = new Worker(
      name,
      {
        slow: async () => {
          running += 1;
          most = Math.max(most, running);
          await sleep(3000);
          running -= 1;
        },
      },
      { connection: redisUrl(), concurrency: 4 },
    );
    track(w);
    await tasks.upsert({ id: 'slow', task: 'slow', timer: 'every 1s', maxRuntime: 10_000 });
    await scheduler().start();
    // (until two runs have ended and three occurrences were skipped, however long that takes)
    const runs = await until(async () => {
      const r = await tasks.runs('slow', { limit: 100 });
      const ended = r.filter((x) => x.jobId && x.finished).length;
      return ended >= 2 && r.filter((x) => x.status === 'skipped').length >= 3 && r;
    }, 30_000);
    expect(most).toBe(1);
    const jobs = runs.filter((r) => r.jobId);
    const skipped = runs.filter((r) => r.status === 'skipped');
    // each occurrence is either run or skipped, once
    const occurrences = runs.map((r) => r.occurrence);
    expect(new Set(occurrences).size).toBe(occurrences.length);
    // a 3 s run on a 1 s timer: at least one skip for each run that ended before the last
    expect(skipped.length).toBeGreaterThanOrEqual(jobs.filter((r) => r.finished).length);
    for (const s of skipped) expect(s.occurrence % 1000).toBe(0);
    // no two runs overlap in time
    const spans = jobs
      .filter((r) => r.started)
      .map((r) => [r.started!, r.finished ?? Infinity])
      .sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i][0]).toBeGreaterThanOrEqual(spans[i - 1][1]);
  });

  it('allow submits every occurrence; buffer-one holds one until the previous run ends', async () => {
    const { tasks, queue, scheduler } = setup();
    await tasks.upsert({ id: 'a', task: 'x', timer: 'every 1s', overlap: 'allow' });
    await tasks.upsert({ id: 'b', task: 'x', timer: 'every 1s', overlap: 'buffer-one' });
    await scheduler({ bufferPollMs: 100 }).start();
    await sleep(4600);
    const a = (await tasks.runs('a', { limit: 100 })).filter((r) => r.jobId);
    expect(a.length).toBeGreaterThanOrEqual(4);
    // b: one job waiting (never started: no executor), one occurrence buffered, the rest skipped
    const b = await tasks.runs('b', { limit: 100 });
    expect(b.filter((r) => r.jobId).length).toBe(1);
    expect(b.filter((r) => r.status === 'skipped').length).toBeGreaterThanOrEqual(2);
    const first = b.find((r) => r.jobId)!;
    // finishing the first run releases the buffered occurrence at the next re-check
    await queue.cancel(first.jobId!);
    const after = await until(async () => {
      const r = (await tasks.runs('b', { limit: 100 })).filter((x) => x.jobId);
      return r.length === 2 ? r : null;
    }, 3000);
    expect(after[0].occurrence).toBeGreaterThan(first.occurrence);
    expect(after[0].occurrence).toBeLessThan(after[0].submitted!);
  });

  it('a task switched from allow to skip judges its next occurrence against the run submitted under allow', async () => {
    let clock = Date.UTC(2021, 5, 1, 12, 0, 0);
    const { tasks, queue, scheduler } = setup(() => clock);
    const t = await tasks.upsert({ id: 'sw', task: 'x', timer: '*:00/10', overlap: 'allow' });
    clock = t.nextrun!;
    const s = scheduler();
    await s.start();
    const first = await until(() => queue.getJob(`sw@${t.nextrun}`));
    expect((await tasks.get('sw'))!.lastJobId).toBe(first.id);
    // No executor: that run is still waiting when the policy turns to skip and the next one comes.
    await tasks.upsert({ id: 'sw', task: 'x', timer: '*:00/10', overlap: 'skip' });
    clock = t.nextrun! + 600_000;
    s.wake();
    const runs = await until(async () => {
      const r = await tasks.runs('sw');
      return r.length === 2 ? r : null;
    });
    expect(runs.map((r) => [r.occurrence, r.status])).toEqual([
      [clock, 'skipped'],
      [t.nextrun, 'waiting'],
    ]);
    expect(await queue.getJob(`sw@${clock}`)).toBeNull();
  });

  it('cancel-previous cancels the unfinished run when the next occurrence is submitted', async () => {
    const { tasks, queue, scheduler } = setup();
    await tasks.upsert({ id: 'c', task: 'x', timer: 'every 1s', overlap: 'cancel-previous' });
    await scheduler().start();
    await sleep(3600);
    const jobs = (await tasks.runs('c', { limit: 100 })).filter((r) => r.jobId);
    expect(jobs.length).toBeGreaterThanOrEqual(3);
    expect(jobs[0].status).toBe('waiting');
    await until(async () => (await queue.getJob(jobs[1].jobId!))!.state === 'cancelled');
    for (const j of jobs.slice(1)) expect((await queue.getJob(j.jobId!))!.state).toBe('cancelled');
  });
});

describe('catch-up after downtime (injected clock)', () => {
  const T0 = Date.UTC(2021, 5, 1, 12, 0, 30);
  for (const [policy, expected] of [
    ['latest', 1],
    ['all', 10],
    ['none', 0],
  ] as const) {
    it(`${policy}: all replicas down for 10 occurrences, then ${expected} submitted`, async () => {
      let clock = T0;
      const { tasks, queue, scheduler } = setup(() => clock);
      const def: PeriodicTaskDefinition = {
        id: 'm',
        task: 'x',
        timer: '*:*:00',
        catchup: policy,
        catchupWindow: 15 * 60_000,
        overlap: 'allow',
      };
      const t = await tasks.upsert(def);
      expect(t.nextrun).toBe(T0 + 30_000);
      clock = T0 + 10 * 60_000; // 10 minutes later: occurrences 12:01 ... 12:10 were missed
      const s = scheduler();
      await s.start();
      const task = await until(async () => {
        const x = await tasks.get('m');
        return x!.nextrun === T0 + 10 * 60_000 + 30_000 ? x : null;
      });
      const runs = await tasks.runs('m', { limit: 100 });
      const jobs = runs.filter((r) => r.jobId).reverse();
      expect(jobs.length).toBe(expected);
      if (policy === 'latest') expect(jobs[0].occurrence).toBe(T0 + 9 * 60_000 + 30_000);
      if (policy === 'all') {
        expect(jobs.map((j) => j.occurrence)).toEqual(Array.from({ length: 10 }, (_, i) => T0 + 30_000 + i * 60_000));
        // submitted in order: FIFO in the queue means they are taken oldest first
        const ids = await queue.client.lrange(`${queue.keys.group('default')}:l`, 0, -1);
        expect(ids.reverse()).toEqual(jobs.map((j) => j.jobId));
      }
      const missed = runs.filter((r) => r.status === 'missed');
      expect(missed.reduce((n, r) => n + r.count!, 0)).toBe(10 - expected);
      expect(task.lastJobId).toBe(expected ? jobs[jobs.length - 1].jobId : undefined);
    });
  }
});

describe('catch-up of occurrences staged before the downtime (injected clock)', () => {
  const T0 = Date.UTC(2021, 5, 1, 12, 0, 30);
  for (const [policy, expected] of [
    ['latest', 1],
    ['all', 11],
    ['none', 0],
  ] as const) {
    it(`${policy}: a replica staged the next occurrence and died, all were down 10 minutes; then ${expected} submitted`, async () => {
      let clock = T0;
      const { tasks, queue, scheduler } = setup(() => clock);
      await tasks.upsert({ id: 'm', task: 'x', timer: '*:*:00', catchup: policy, catchupWindow: 15 * 60_000, overlap: 'allow' });
      const first = T0 + 30_000;
      clock = first - 1000;
      const a = scheduler();
      await a.start();
      await until(async () => (await queue.client.zcard(`${queue.keys.prefix}p:staged`)) === 1);
      a.destroy();
      clock = first + 10 * 60_000 + 30_000; // 12:01 (staged) ... 12:11 were missed
      const s = scheduler();
      await s.start();
      await until(
        async () =>
          (await tasks.get('m'))!.nextrun === first + 11 * 60_000 &&
          (await queue.client.zcard(`${queue.keys.prefix}p:staged`)) === 0,
      );
      const runs = await tasks.runs('m', { limit: 100 });
      const jobs = runs.filter((r) => r.jobId).reverse();
      expect(jobs.map((j) => j.occurrence)).toEqual(
        policy === 'all'
          ? Array.from({ length: 11 }, (_, i) => first + i * 60_000)
          : policy === 'latest'
            ? [first + 10 * 60_000]
            : [],
      );
      const missed = runs.filter((r) => r.status === 'missed');
      expect(missed.reduce((n, r) => n + r.count!, 0)).toBe(11 - expected);
    });
  }
});

describe('time zones across DST (injected clock)', () => {
  it('calendar with a zone suffix and cron with a timezone get the right UTC nextrun', async () => {
    let clock = Date.UTC(2021, 2, 12, 0, 0);
    const { tasks, scheduler } = setup(() => clock);
    await tasks.upsert({ id: 'paris', task: 'x', timer: '*-*-* 09:00 Europe/Paris', overlap: 'allow' });
    await tasks.upsert({ id: 'ny', task: 'x', timer: '0 9 * * *', timezone: 'America/New_York', overlap: 'allow' });
    const s = scheduler();
    await s.start();
    const seen: Record<string, number[]> = { paris: [], ny: [] };
    // Walk the clock from one nextrun to the next through both DST changes (US Mar 14, EU Mar 28).
    while (clock < Date.UTC(2021, 2, 30)) {
      const [p, n] = [(await tasks.get('paris'))!, (await tasks.get('ny'))!];
      const next = Math.min(p.nextrun!, n.nextrun!);
      clock = next;
      s.wake();
      const id = p.nextrun === next ? 'paris' : 'ny';
      await until(async () => (await tasks.get(id))!.nextrun! > next);
      seen[id].push(next);
    }
    const iso = (xs: number[]) => xs.map((x) => new Date(x).toISOString().slice(5, 16));
    expect(iso(seen.ny).slice(0, 4)).toEqual(['03-12T14:00', '03-13T14:00', '03-14T13:00', '03-15T13:00']);
    expect(iso(seen.paris).slice(14, 18)).toEqual(['03-26T08:00', '03-27T08:00', '03-28T07:00', '03-29T07:00']);
    const jobs = (await tasks.runs('paris', { limit: 100 })).filter((r) => r.jobId);
    expect(jobs.length).toBe(seen.paris.length);
  });
});

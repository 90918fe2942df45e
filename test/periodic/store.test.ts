import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, Scheduler, ValidationError } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { queueKeys } from '../../src/redis/keys.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

function setup(opts: { now?: () => number } = {}) {
  const name = uniqueQueue('p');
  const tasks = new PeriodicTasks(name, { connection: redisUrl(), ...opts });
  const queue = new Queue(name, { connection: redisUrl() });
  track(tasks);
  track(queue);
  return { name, tasks, queue };
}

describe('periodic store and single replica', () => {
  it('stores a definition and submits each occurrence once with job id <task>@<occurrence>', async () => {
    const { name, tasks, queue } = setup();
    const t = await tasks.upsert({
      id: 'tick',
      task: 'noop',
      timer: 'every 1s',
      args: { n: 1 },
      group: 'g1',
      overlap: 'allow',
    });
    expect(t.enabled).toBe(true);
    expect(t.nextrun! % 1000).toBe(0);
    expect(t.args).toEqual({ n: 1 });
    expect(t.maxRuntime).toBe(500);
    const s = new Scheduler(name, { connection: redisUrl() });
    track(s);
    await s.start();
    const runs = await eventually('three runs of tick', async () => {
      const r = await tasks.runs('tick');
      return r.length >= 3 && r;
    });
    for (const r of runs) {
      expect(r.jobId).toBe(`tick@${r.occurrence}`);
      expect(r.status).toBe('waiting');
      // (on its occurrence, not a period late; the bound leaves room for a loaded machine)
      expect(r.submitted! - r.occurrence).toBeLessThan(1000);
      expect(r.submitted! - r.occurrence).toBeGreaterThanOrEqual(0);
      const job = await queue.getJob(r.jobId!);
      expect(job!.tracker).toBe('tick');
      expect(job!.occurrence).toBe(r.occurrence);
      expect(job!.group).toBe('g1');
      expect(job!.args).toEqual({ n: 1 });
    }
    const occ = runs.map((r) => r.occurrence);
    expect(occ).toEqual([...occ].sort((a, b) => b - a));
    for (let i = 1; i < occ.length; i++) expect(occ[i - 1] - occ[i]).toBe(1000);
  });

  it('keeps the run history by count (trimmed as the task is claimed), and lists upcoming occurrences in time order', async () => {
    const { name, tasks } = setup();
    const later = await tasks.upsert({ id: 'later', task: 'x', timer: 'every 1h' });
    expect(await tasks.upcoming({ limit: 5, until: later.nextrun! + 3_600_000 })).toEqual([
      { id: 'later', task: 'x', group: 'default', occurrence: later.nextrun },
      { id: 'later', task: 'x', group: 'default', occurrence: later.nextrun! + 3_600_000 },
    ]);
    await tasks.upsert({ id: 'h', task: 'x', timer: 'every 1s', overlap: 'allow' });
    const up = await tasks.upcoming({ limit: 4 });
    expect(up.map((u) => u.id)).toEqual(['h', 'h', 'h', 'h']);
    expect(up[1].occurrence - up[0].occurrence).toBe(1000);
    const s = new Scheduler(name, { connection: redisUrl(), keepRuns: { count: 3 } });
    track(s);
    await s.start();
    // (five occurrences submitted: untrimmed, the history would hold five)
    const runs = await eventually('the fifth run of h', async () => {
      const r = await tasks.runs('h', { limit: 100 });
      return r.length > 0 && r[0].occurrence >= up[0].occurrence + 4000 && r;
    });
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.length).toBeLessThanOrEqual(4);
    const list = await tasks.list();
    expect(list.map((t) => t.id)).toEqual(['h', 'later']);
    expect(list[0].lastJobId).toBe(runs[0].jobId);
  });

  it('refuses bad definitions naming the field, writing nothing', async () => {
    const { name, tasks } = setup();
    const bad: Array<[unknown, string]> = [
      [{ id: 'a', task: 'x', timer: 'every banana' }, 'timer'],
      [{ id: 'a', task: 'x', timer: '*-*-* 09:00', timezone: 'Mars/Olympus' }, 'timezone'],
      [{ id: 'a b', task: 'x', timer: 'daily' }, 'id'],
      [{ id: 'a', task: '', timer: 'daily' }, 'task'],
      [{ id: 'a', task: 'x', timer: 'daily', overlap: 'sometimes' }, 'overlap'],
      [{ id: 'a', task: 'x', timer: 'daily', catchup: 'maybe' }, 'catchup'],
      [{ id: 'a', task: 'x', timer: 'daily', tolerance: -1 }, 'tolerance'],
      [{ id: 'a', task: 'x', timer: 'daily', maxRuntime: 1.5 }, 'maxRuntime'],
      [{ id: 'a', task: 'x', timer: 'daily', args: { f: () => 1 } }, 'args.f'],
      [{ id: 'a', task: 'x', timer: 'daily', colour: 'red' }, 'colour'],
      [{ id: 'a', task: 'x', timer: '0 9 * * * *  *' }, 'timer'],
    ];
    for (const [def, field] of bad) {
      const err = await tasks.upsert(def as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(def)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    const keys = await rawClient().keys(`{rota:${name}}:*`);
    expect(keys).toEqual([]);
  });

  it('stages an occurrence ahead as a planned job nobody sees; any replica submits it once at the occurrence, also when the one that staged it died', async () => {
    const { name, tasks, queue } = setup();
    const raw = rawClient();
    const keys = queueKeys(name);
    const t = await tasks.upsert({ id: 'st', task: 'noop', timer: 'every 1h', overlap: 'allow' });
    const jobId = `st@${t.nextrun}`;
    // The replicas' clock: one second before the occurrence, then at it.
    let clock = t.nextrun! - 1000;
    const opts = { connection: redisUrl(), now: () => clock, lookaheadMs: 2000 };
    // A replica that stages the occurrence and dies before it comes.
    const first = new Scheduler(name, opts);
    await first.start();
    await eventually(async () => (await raw.hget(keys.job(jobId), 'state')) === 'planned');
    first.destroy();
    expect(await queue.getJob(jobId)).toBeNull();
    expect(await queue.cancel(jobId)).toBeNull();
    expect((await queue.counts()).waiting ?? 0).toBe(0);
    // Its id is reserved for it: a caller's bulk that uses it is refused whole.
    const clash = queue.submitBulk([
      { id: 'other', task: 'noop' },
      { id: jobId, task: 'noop' },
    ]);
    await expect(clash).rejects.toThrow(ValidationError);
    await expect(clash).rejects.toThrow(/specs\[1\]\.id.*of a periodic run, which only the scheduler may submit/);
    expect(await queue.getJob('other')).toBeNull();
    // Single submits sent together: only the one with the reserved id fails.
    const [ok, refused] = await Promise.allSettled([
      queue.submit({ id: 'other', task: 'noop' }),
      queue.submit({ id: jobId, task: 'noop' }),
    ]);
    expect(ok).toMatchObject({ status: 'fulfilled', value: { id: 'other', state: 'waiting' } });
    expect((refused as PromiseRejectedResult).reason).toMatchObject({ name: 'ValidationError', field: 'id' });
    expect(await raw.hget(keys.job(jobId), 'state')).toBe('planned');
    expect(await tasks.runs('st')).toEqual([]);
    // Committed: the task already looks at the occurrence after, but still shows this one as next.
    expect(Number(await raw.hget(`${keys.prefix}p:t:st`, 'nextrun'))).toBe(t.nextrun! + 3_600_000);
    expect((await tasks.get('st'))!.nextrun).toBe(t.nextrun);
    expect((await tasks.upcoming({ limit: 2 })).map((u) => u.occurrence)).toEqual([t.nextrun, t.nextrun! + 3_600_000]);
    // Another replica releases it at the occurrence, once.
    clock = t.nextrun!;
    const second = new Scheduler(name, opts);
    track(second);
    await second.start();
    const job = await eventually(() => queue.getJob(jobId));
    expect(job.state).toBe('waiting');
    expect(job.occurrence).toBe(t.nextrun);
    expect(await raw.zcard(`${keys.prefix}p:staged`)).toBe(0);
    const runs = await tasks.runs('st');
    expect(runs.map((r) => r.jobId)).toEqual([jobId]);
    expect((await tasks.get('st'))!.lastJobId).toBe(jobId);
    let adds = 0;
    for (const [sid, fields] of await raw.xrange(keys.events, '-', '+')) {
      adds += parseEntry(sid, fields).filter((e) => e.id === jobId && e.state === 'waiting').length;
    }
    expect(adds).toBe(1);
  });

  it('close() releases the occurrences it staged that fall within the look-ahead', async () => {
    const { name, tasks, queue } = setup();
    const t = await tasks.upsert({ id: 'c', task: 'noop', timer: 'every 1h', overlap: 'allow' });
    // A clock running in real time, 600 ms before the occurrence.
    const offset = t.nextrun! - 600 - Date.now();
    const s = new Scheduler(name, { connection: redisUrl(), now: () => Date.now() + offset });
    await s.start();
    const raw = rawClient();
    await eventually(async () => (await raw.zcard(`${queue.keys.prefix}p:staged`)) === 1);
    await s.close();
    expect((await queue.getJob(`c@${t.nextrun}`))?.state).toBe('waiting');
    expect(await raw.zcard(`${queue.keys.prefix}p:staged`)).toBe(0);
  });

  it('drops staged occurrences when the task is disabled, re-timed or removed', async () => {
    const { name, tasks, queue } = setup();
    const raw = rawClient();
    const keys = queueKeys(name);
    const staged = () => raw.zrange(`${keys.prefix}p:staged`, 0, -1);
    const t = await tasks.upsert({ id: 'd', task: 'noop', timer: 'every 1h' });
    let clock = t.nextrun! - 1000;
    const s = new Scheduler(name, { connection: redisUrl(), now: () => clock, lookaheadMs: 2000 });
    track(s);
    await s.start();
    const cases: Array<() => Promise<unknown>> = [
      () => tasks.disable('d'),
      () => tasks.upsert({ id: 'd', task: 'noop', timer: '*:17' }),
      () => tasks.remove('d'),
    ];
    for (const [i, change] of cases.entries()) {
      const mark = `mark-${i}`;
      const next = (await tasks.get('d'))!.nextrun!;
      const jobId = `d@${next}`;
      clock = next - 1000;
      // A task of one occurrence at the same instant: once it is released, so would the dropped one have been.
      await tasks.upsert({ id: mark, task: 'noop', timer: new Date(next).toISOString() });
      s.wake();
      await eventually(`${jobId} and the mark staged`, async () => {
        const all = await staged();
        return all.some((m) => m.startsWith(`s${jobId}|`)) && all.some((m) => m.startsWith(`s${mark}@${next}|`));
      });
      await change();
      // the occurrence staged under the old definition is gone (a new timer may stage its own)
      expect((await staged()).filter((m) => m.startsWith(`s${jobId}|`))).toEqual([]);
      expect(await raw.exists(keys.job(jobId))).toBe(0);
      if (await tasks.get('d')) expect((await tasks.runs('d')).map((r) => r.jobId)).not.toContain(jobId);
      clock = next + 10;
      s.wake();
      await eventually('the mark released', () => queue.getJob(`${mark}@${next}`));
      expect(await queue.getJob(jobId)).toBeNull();
      // (enabled again before its occurrence on the replica's clock, so that the replica stages it rather than catches it up)
      clock = next - 1000;
      if (await tasks.get('d')) await tasks.enable('d');
    }
  });
});

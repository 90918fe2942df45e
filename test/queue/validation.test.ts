/** Input refused before anything is written: values nested too deep, and fields a spec does not have. */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PeriodicTasks, ValidationError } from '../../src/index.js';
import { MAX_DEPTH } from '../../src/queue/validate.js';
import { closeAll, openQueue, openWorker, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

/** Every key of a queue (periodic keys included) with its serialized value. */
async function dump(name: string): Promise<Map<string, string>> {
  const r = rawClient();
  try {
    const out = new Map<string, string>();
    for (const k of (await r.keys(`{rota:${name}}:*`)).sort())
      out.set(k, ((await r.dumpBuffer(k)) ?? Buffer.alloc(0)).toString('hex'));
    return out;
  } finally {
    r.disconnect();
  }
}

/** An object (or an array) nesting `levels` levels. */
function nested(levels: number, array = false): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = array ? [v] : { a: v };
  return v;
}

/** What `p` rejected with, or what it resolved to. */
const outcome = (p: Promise<unknown>): Promise<unknown> => p.catch((e: unknown) => e);

function expectRefused(err: unknown, field: string, message: RegExp): void {
  expect(err, field).toBeInstanceOf(ValidationError);
  expect((err as ValidationError).field).toBe(field);
  expect((err as Error).message).toMatch(message);
}

describe('nesting depth', () => {
  it(`refuses args nested more than ${MAX_DEPTH} levels (10,000 too) with a ValidationError naming the limit, and writes nothing`, async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    await q.submit({ task: 'ok', args: nested(MAX_DEPTH) });
    await q.submit({ task: 'ok', args: nested(MAX_DEPTH, true) });
    const before = await dump(name);
    const limit = new RegExp(`more than ${MAX_DEPTH} levels deep`);
    expectRefused(await outcome(q.submit({ task: 'ok', args: nested(10_000) })), 'args', limit);
    expectRefused(await outcome(q.submit({ task: 'ok', args: nested(10_000, true) })), 'args', limit);
    expectRefused(await outcome(q.submit({ task: 'ok', args: nested(MAX_DEPTH + 1) })), 'args', limit);
    expectRefused(
      await outcome(q.submitBulk([{ task: 'ok' }, { task: 'ok', args: { list: [nested(10_000)] } }])),
      'specs[1].args',
      limit,
    );
    expect(await dump(name)).toEqual(before);
    expect((await q.counts()).waiting).toBe(2);
  });

  it('refuses periodic tasks and event rules whose args nest too deep, and writes nothing', async () => {
    const name = uniqueQueue();
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await tasks.upsert({ id: 'kept', task: 't', timer: 'daily' });
    const before = await dump(name);
    const limit = new RegExp(`more than ${MAX_DEPTH} levels deep`);
    expectRefused(await outcome(tasks.upsert({ id: 'deep', task: 't', timer: 'daily', args: nested(10_000) })), 'args', limit);
    expectRefused(
      await outcome(tasks.rule({ id: 'deep', after: 'e', delay: 1000, task: 't', args: nested(10_000) })),
      'args',
      limit,
    );
    expect(await dump(name)).toEqual(before);
  });

  it('fails a run whose result nests too deep, naming the limit, and the executor runs on', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const deep = await q.submit({ task: 'deep', maxRetries: 3 });
    const ended: Job[] = [];
    const w = openWorker(name, { deep: () => nested(10_000), fine: () => 'fine' });
    w.on('completed', (j) => ended.push(j));
    w.on('failed', (j) => ended.push(j));
    const fine = await q.submit({ task: 'fine' });
    await new Promise<void>((resolve) => {
      const check = () => ended.length === 2 && resolve();
      w.on('completed', check);
      w.on('failed', check);
    });
    const [d, f] = [(await q.getJob(deep.id))!, (await q.getJob(fine.id))!];
    expect([d.state, d.retries]).toEqual(['failed', 0]);
    expect(d.error).toMatch(new RegExp(`ValidationError: result: nests arrays and objects more than ${MAX_DEPTH} levels deep`));
    expect([f.state, f.result]).toEqual(['success', 'fine']);
  });
});

describe('unknown fields', () => {
  it('refuses a submit with a misspelt field, naming it and the field it likely means, and writes nothing', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    await q.submit({ task: 'ok' });
    const before = await dump(name);
    const typo = { task: 'ok', maxRetry: 10, priorty: 'high' } as never;
    expectRefused(await outcome(q.submit(typo)), 'maxRetry', /is not a known field; did you mean "maxRetries"\?/);
    expectRefused(await outcome(q.submit({ task: 'ok', priorty: 'high' } as never)), 'priorty', /did you mean "priority"\?/);
    expectRefused(
      await outcome(q.submit({ task: 'ok', colour: 'red' } as never)),
      'colour',
      /is not a known field; known fields are task, group, priority, .*, args$/,
    );
    expectRefused(
      await outcome(q.submitBulk([{ task: 'ok' }, { task: 'ok', Group: 'g' } as never])),
      'specs[1].Group',
      /did you mean "group"\?/,
    );
    expectRefused(await outcome(q.submitBulk([typo])), 'maxRetry', /did you mean "maxRetries"/);
    // the fields of a periodic task's run are the scheduler's: a caller cannot pose as one
    expectRefused(await outcome(q.submit({ task: 'ok', tracker: 'nightly' } as never)), 'tracker', /is not a known field/);
    expectRefused(await outcome(q.submit({ task: 'ok', occurrence: 1 } as never)), 'occurrence', /is not a known field/);
    expect(await dump(name)).toEqual(before);
    expect((await q.counts()).waiting).toBe(1);
  });

  it('names the field a periodic task definition likely misspells', async () => {
    const name = uniqueQueue();
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    expectRefused(
      await outcome(tasks.upsert({ id: 'x', task: 't', timer: 'daily', timezon: 'UTC' } as never)),
      'timezon',
      /did you mean "timezone"\?/,
    );
    expect(await dump(name)).toEqual(new Map());
  });
});

/** An object whose `field` reads `first` once, then `later` on every read after. */
function shifting<T extends object>(base: T, field: string, first: unknown, later: unknown): T {
  let reads = 0;
  return Object.defineProperty({ ...base }, field, { enumerable: true, get: () => (reads++ === 0 ? first : later) });
}

describe('bad arguments of every method: typed errors, nothing written', () => {
  it('refuses holes, bad limits, windows, dates, bigints and ids with a ValidationError naming them', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await q.submit({ task: 'ok' });
    await tasks.upsert({ id: 'kept', task: 't', timer: 'daily' });
    const before = await dump(name);
    const cases: Array<[Promise<unknown>, string]> = [
      [q.submitBulk(new Array(2)), 'specs[0]'],
      [q.submitBulk(Object.assign(new Array(3), { 0: { task: 'ok' }, 2: { task: 'ok' } })), 'specs[1]'],
      [q.setGroupLimit('g', null as never), 'options'],
      [q.setGroupLimit('g', { concurrency: 1e300 }), 'concurrency'],
      [q.setGroupLimit('g', { weight: NaN }), 'weight'],
      [q.submit({ task: 'ok', args: { n: 10n ** 30n } }), 'args.n'],
      [q.submit({ task: 'ok', args: [-(2n ** 64n)] }), 'args[0]'],
      [q.submit({ task: 'ok', args: { when: new Date(Number.NaN) } }), 'args.when'],
      [q.submit({ task: 'ok', runAt: new Date(Number.NaN) }), 'runAt'],
      [q.jobs({ state: 'waiting', limit: Number.NaN }), 'limit'],
      [q.jobs({ state: 'waiting', limit: 1e300 }), 'limit'],
      [q.jobs({ state: 'nope' as never }), 'state'],
      [q.jobs(null as never), 'options'],
      [q.stats(Number.NaN), 'windowMs'],
      [q.stats(-1), 'windowMs'],
      [q.clean({ state: 'success', olderThan: 1e300 }), 'olderThan'],
      [q.clean({ state: 'success', limit: Number.NaN }), 'limit'],
      [q.retryFailed({ group: '' }), 'group'],
      [q.getJob(42 as never), 'id'],
      [q.jobLogs(''), 'id'],
      [q.cancel(null as never), 'id'],
      [q.retry({} as never), 'id'],
      [tasks.upcoming({ until: new Date(Number.NaN) }), 'until'],
      [tasks.upcoming({ until: Number.NaN }), 'until'],
      [tasks.upcoming({ limit: 1e300 }), 'limit'],
      [tasks.runs('kept', null as never), 'options'],
      [tasks.list(null as never), 'options'],
      [tasks.get(42 as never), 'id'],
    ];
    for (const [call, field] of cases) {
      const err = await outcome(call);
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, String(err)).toBe(field);
    }
    expect(() => q.events({ from: 'soon' })).toThrow(ValidationError);
    expect(await dump(name)).toEqual(before);
  });

  it('writes the values it checked: a getter that answers otherwise on a later read changes nothing', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    const huge = 'x'.repeat(1_000_000);
    const job = await q.submit(shifting({ group: 'g' }, 'task', 'ok', huge) as never);
    expect((await q.getJob(job.id))!.task).toBe('ok');
    const [bulk] = await q.submitBulk([shifting({ task: 'ok' }, 'group', 'g', huge) as never]);
    expect((await q.getJob(bulk.id))!.group).toBe('g');
    const t = await tasks.upsert(shifting({ id: 'p', timer: 'daily' }, 'task', 'ok', huge) as never);
    expect(t.task).toBe('ok');
    const r = rawClient();
    try {
      for (const k of await r.keys(`{rota:${name}}*`)) expect(await r.memory('USAGE', k), k).toBeLessThan(100_000);
    } finally {
      r.disconnect();
    }
  });
});

/** Retries with backoff, cancellation, idempotent submit, and bad input that writes nothing. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Job, PayloadTooLargeError, Queue, ValidationError } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import {
  closeAll,
  eventually,
  openQueue,
  openWorker,
  privateRedis,
  rawClient,
  redisUrl,
  uniqueQueue,
  until,
} from '../helpers/setup.js';

afterEach(closeAll);
/** A server of this file's own for the test that MONITORs: other files' commands would crowd the stream. */
const own = privateRedis();
const queue = openQueue;
const worker = openWorker;

/** Every key of a queue with its serialized value, for before/after comparisons. */
async function dump(name: string): Promise<Map<string, string>> {
  const r = rawClient();
  try {
    const keys = (await r.keys(`{rota:${name}}:*`)).sort();
    const out = new Map<string, string>();
    for (const k of keys) out.set(k, ((await r.dumpBuffer(k)) ?? Buffer.alloc(0)).toString('hex'));
    return out;
  } finally {
    r.disconnect();
  }
}

describe('job lifecycle', () => {
  it('retries a failing job with exponential backoff, then succeeds', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const attempts: Array<{ at: number; due?: number; retries: number; error?: string }> = [];
    const failedAt: number[] = [];
    const w = worker(
      name,
      {
        flaky: async ({ job }) => {
          attempts.push({ at: Date.now(), due: job.due, retries: job.retries, error: job.error });
          if (attempts.length <= 2) {
            failedAt.push(Date.now());
            throw new Error(`attempt ${attempts.length} failed`);
          }
          return 'ok';
        },
      },
      { retryDelay: 100 },
    );
    const stuck: Job[] = [];
    w.on('stuck', (j) => stuck.push(j));
    const job = await q.submit({ task: 'flaky', maxRetries: 3 });
    const done: Job[] = [];
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 1);
    const final = (await q.getJob(job.id))!;
    expect(final.state).toBe('success');
    expect(final.retries).toBe(2);
    expect(final.result).toBe('ok');
    expect(stuck.map((j) => j.error)).toEqual([
      expect.stringContaining('attempt 1 failed'),
      expect.stringContaining('attempt 2 failed'),
    ]);
    expect(attempts.map((a) => a.retries)).toEqual([0, 1, 2]);
    // a retried run is handed its last error
    expect(attempts.map((a) => a.error)).toEqual([
      undefined,
      expect.stringContaining('attempt 1 failed'),
      expect.stringContaining('attempt 2 failed'),
    ]);
    for (let k = 1; k <= 2; k++) {
      const backoff = 100 * 2 ** (k - 1);
      // The due time is the failure time plus the backoff (server clock), and the retry starts no earlier.
      expect(attempts[k].due! - failedAt[k - 1]).toBeGreaterThanOrEqual(backoff - 2);
      expect(attempts[k].at).toBeGreaterThanOrEqual(attempts[k].due! - 1);
    }
  });

  it('hands the handler the job as submitted: every field of its spec, its args of any type, and its take', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const seen: Job[] = [];
    const w = worker(name, { look: ({ job }) => void seen.push(job) });
    const args = { text: 'zß€😀', bytes: Buffer.from([0, 255, 7]), n: 2 ** 40, nested: [null, true, { a: 1.5 }] };
    const job = await q.submit({
      task: 'look',
      group: 'g:{1}',
      args,
      subject: 'a subject',
      submitter: 'me',
      priority: 'high',
      maxRetries: 5,
      maxRuntime: 60_000,
    });
    await eventually(async () => seen.length === 1);
    expect(seen[0]).toMatchObject({
      id: job.id,
      task: 'look',
      group: 'g:{1}',
      args,
      subject: 'a subject',
      submitter: 'me',
      priority: 'high',
      maxRetries: 5,
      maxRuntime: 60_000,
      retries: 0,
      submitted: job.submitted,
      state: 'scheduled',
      worker: w.id,
    });
    expect(seen[0].takeSeq).toBeGreaterThan(0);
  });

  it('a quick run has its start sent with its end: running, then success, in one call', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const job = await q.submit({ task: 'quick', args: 1 });
    const w = openWorker(name, { quick: () => 'ok' });
    let completed = false;
    w.on('completed', () => (completed = true));
    await until(w, 'completed', () => completed);
    const done = (await q.getJob(job.id))!;
    expect(done.state).toBe('success');
    expect(done.started).toBeGreaterThan(0);
    expect(done.finished).toBeGreaterThanOrEqual(done.started!);
    const entries = (await rawClient().xrange(q.keys.events, '-', '+')) as Array<[string, string[]]>;
    const mine = entries
      .map(([sid, f]) =>
        parseEntry(sid, f)
          .filter((e) => e.id === job.id)
          .map((e) => e.state),
      )
      .filter((x) => x.length);
    expect(mine).toEqual([['waiting'], ['scheduled'], ['running', 'success']]);
    expect((await q.counts()).running ?? 0).toBe(0);
  });

  it('fails a job for good once maxRetries are used', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const w = worker(
      name,
      {
        bad: () => {
          throw new Error('always');
        },
      },
      { retryDelay: 10 },
    );
    const failed: Job[] = [];
    w.on('failed', (j) => failed.push(j));
    const job = await q.submit({ task: 'bad', maxRetries: 2 });
    await until(w, 'failed', () => failed.length === 1);
    expect(await q.getJob(job.id)).toMatchObject({ state: 'failed', retries: 2, error: expect.stringContaining('always') });
  });

  it('cancels a waiting job at once and a running job through its signal', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let aborted = false;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const w = worker(
      name,
      {
        hold: ({ signal }) =>
          new Promise((_resolve, reject) => {
            started();
            signal.addEventListener('abort', () => {
              aborted = true;
              reject(signal.reason);
            });
          }),
      },
      { concurrency: 1 },
    );
    const held = await q.submit({ task: 'hold', group: 'x' });
    const queued = await q.submit({ task: 'hold', group: 'x' });
    await running;
    expect(await q.cancel(queued.id)).toBe('cancelled');
    expect((await q.getJob(queued.id))!.state).toBe('cancelled');
    const cancelled: Job[] = [];
    w.on('cancelled', (j) => cancelled.push(j));
    expect(await q.cancel(held.id)).toBe('cancelling');
    await until(w, 'cancelled', () => cancelled.length === 1);
    expect(aborted).toBe(true);
    expect((await q.getJob(held.id))!.state).toBe('cancelled');
    expect(await q.cancel(held.id)).toBe('cancelled');
    expect(await q.cancel('no-such-job')).toBeNull();
    const counts = await q.counts();
    expect(counts).toMatchObject({ cancelled: 2, waiting: 0, running: 0, scheduled: 0 });
  });

  it('cancels a waiting job out of its priority list and puts it back there on retry', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const low = await q.submit({ task: 'note', group: 'g' });
    const high = await q.submit({ task: 'note', group: 'g', priority: 'high' });
    expect(await q.cancel(high.id)).toBe('cancelled');
    expect((await q.groups()).find((g) => g.group === 'g')!.waiting).toBe(1);
    expect(await q.retry(high.id)).toBe('waiting');
    expect((await q.groups()).find((g) => g.group === 'g')!.waiting).toBe(2);
    // Back in the high list, it runs first though the low job came before it.
    const ran: string[] = [];
    const w = worker(name, { note: ({ job }) => void ran.push(job.id) }, { concurrency: 1 });
    await until(w, 'completed', () => ran.length === 2);
    expect(ran).toEqual([high.id, low.id]);
  });

  it('returns the existing job for an id that was submitted before', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const first = await q.submit({ id: 'invoice-42', task: 'send', args: { n: 1 } });
    const again = await q.submit({ id: 'invoice-42', task: 'send', args: { n: 2 } });
    expect(again.args).toEqual({ n: 1 });
    expect(again.submitted).toBe(first.submitted);
    const bulk = await q.submitBulk([
      { id: 'invoice-42', task: 'send' },
      { id: 'invoice-43', task: 'send' },
    ]);
    expect(bulk.map((j) => j.id)).toEqual(['invoice-42', 'invoice-43']);
    expect((await q.counts()).waiting).toBe(2);
    expect((await q.groups()).find((g) => g.group === 'default')!.waiting).toBe(2);
    // An id repeated inside one bulk of new ids is written once; the repeat answers the first.
    const repeated = await q.submitBulk([
      { id: 'invoice-50', task: 'send', args: { n: 1 } },
      { id: 'invoice-51', task: 'send' },
      { id: 'invoice-50', task: 'send', args: { n: 2 } },
    ]);
    expect(repeated.map((j) => j.args)).toEqual([{ n: 1 }, undefined, { n: 1 }]);
    expect((await q.counts()).waiting).toBe(4);
    expect((await q.groups()).find((g) => g.group === 'default')!.waiting).toBe(4);
  });

  it('sends submit() calls made together in one script call, and writes or refuses each on its own', async () => {
    const name = uniqueQueue();
    const q = queue(name, { connection: own.server.url });
    const prefix = `{rota:${name}}:`;
    const monitor = await own.admin.monitor();
    const scriptCalls: string[][] = [];
    let marked = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0].toLowerCase() === 'fcall' && args.includes(prefix)) scriptCalls.push(args);
      if (args[0].toLowerCase() === 'echo' && args[1] === prefix) marked = true;
    });
    try {
      const results = await Promise.allSettled([
        q.submit({ id: 'a', task: 't', args: 1 }),
        q.submit({ id: 'a', task: 't', args: 2 }),
        q.submit({ task: '', args: 3 }),
        q.submit({ id: 'b', task: 't', group: 'g2' }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      const jobs = results.map((r) => (r.status === 'fulfilled' ? r.value : null));
      // the repeat of id `a` sent with it answers the job the first call wrote
      expect(jobs.map((j) => j && [j.id, j.args])).toEqual([['a', 1], ['a', 1], null, ['b', undefined]]);
      expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(ValidationError);
      expect((await q.counts()).waiting).toBe(2);
      // Redis feeds a monitor in the order it runs commands: once this echo is seen, all before it were.
      await q.client.echo(prefix);
      await eventually(async () => marked);
      expect(scriptCalls).toHaveLength(1);
    } finally {
      monitor.disconnect();
    }
  });

  it('submits while a caller fakes the timers (submit() calls wait for no timer)', async () => {
    const q = queue(uniqueQueue());
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'setInterval', 'queueMicrotask'] });
    try {
      const job = await q.submit({ task: 't', args: 1 });
      expect(job.state).toBe('waiting');
    } finally {
      vi.useRealTimers();
    }
    expect((await q.getJob((await q.submitBulk([{ task: 't' }]))[0].id))!.state).toBe('waiting');
  });

  it('accepts group names with braces, colons, spaces and unicode', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const groups = ['{tenant}', 'a:b:high', 'with space', 'zürich-日本', '}{'];
    const jobs = await q.submitBulk(groups.map((group) => ({ task: 'echo', group, args: group })));
    expect((await q.groups()).map((g) => [g.group, g.waiting])).toEqual([...groups].sort().map((g) => [g, 1]));
    await q.setGroupLimit('a:b:high', { weight: 2 });
    const done: Job[] = [];
    const w = worker(name, { echo: ({ args }) => args }, { concurrency: 2 });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === groups.length);
    for (const j of jobs) expect(await q.getJob(j.id)).toMatchObject({ state: 'success', result: j.group, group: j.group });
    // Drained groups are not kept, but for one with a setting of its own.
    expect(await q.groups()).toEqual([
      { group: 'a:b:high', waiting: 0, running: 0, stuck: 0, paused: false, limit: 0, weight: 2, rate: null },
    ]);
    await q.setGroupLimit('a:b:high', { weight: 1 });
    expect(await q.groups()).toEqual([]);
    const r = rawClient();
    // Every key stays under the queue's hash tag.
    for (const k of await r.keys(`*${name}*`)) expect(k.startsWith(`{rota:${name}}:`)).toBe(true);
    r.disconnect();
  });

  it('refuses bad input with a typed error naming the field, and writes nothing', async () => {
    const name = uniqueQueue();
    const q = queue(name, { maxArgsBytes: 1024 });
    await q.submit({ task: 'ok', group: 'g' });
    const before = await dump(name);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const cases: Array<[unknown, string, RegExp]> = [
      [{ task: '' }, 'task', /empty/],
      [{ task: 'x'.repeat(201) }, 'task', /200 bytes/],
      [{ task: 'ok', group: '' }, 'group', /empty/],
      [{ task: 'ok', group: 'é'.repeat(101) }, 'group', /200 bytes/],
      [{ task: 'ok', args: { fn: () => 1 } }, 'args.fn', /function/],
      [{ task: 'ok', args: { list: [1, Symbol('s')] } }, 'args.list[1]', /symbol/],
      [{ task: 'ok', args: cyclic }, 'args.self', /cycle/],
      [{ task: 'ok', args: { n: NaN } }, 'args.n', /NaN/],
      [{ task: 'ok', args: new Map() }, 'args', /Map instance/],
      [{ task: 'ok', args: 'x'.repeat(2000) }, 'args', /over the limit of 1024 bytes/],
      [{ task: 'ok', priority: 'urgent' }, 'priority', /./],
      [{ task: 'ok', maxRetries: -1 }, 'maxRetries', /./],
    ];
    for (const [spec, field, message] of cases) {
      const err = await q.submit(spec as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(field)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
      expect((err as Error).message).toMatch(message);
    }
    expect(await q.submit({ task: 'ok', args: 'x'.repeat(2000) }).catch((e) => e)).toBeInstanceOf(PayloadTooLargeError);
    // One bad spec in a batch refuses the whole batch.
    const bulkErr = await q.submitBulk([{ task: 'ok' }, { task: 'ok', group: '' }]).catch((e: ValidationError) => e);
    expect(bulkErr).toBeInstanceOf(ValidationError);
    expect((bulkErr as ValidationError).field).toBe('specs[1].group');
    await expect(q.setGroupLimit('g', { weight: 0 })).rejects.toThrow(/weight/);
    await expect(q.setGroupLimit('', { concurrency: 1 })).rejects.toThrow(/group/);
    expect(() => new Queue('bad{name}', { connection: redisUrl() })).toThrow(ValidationError);
    expect(await dump(name)).toEqual(before);
  });
});

/** Deduplication (submit's `dedup`): unique until start or end, throttle, debounce, and the paths that release a key. */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Job, reshard, type SubmitSpec, ValidationError } from '../../src/index.js';
import { shardOfGroup, shardTag } from '../../src/redis/shards.js';
import {
  closeAll,
  eventually,
  openQueue,
  openWorker,
  rawClient,
  redisUrl,
  streamEvents,
  uniqueQueue,
  until,
} from '../helpers/setup.js';

afterEach(closeAll);
const raw = rawClient();
afterAll(() => raw.disconnect());

/** The dedup keys of queue `name` (unsharded), as Redis holds them. */
async function dedupKeys(name: string): Promise<string[]> {
  return (await raw.keys(`{rota:${name}}:dd:*`)).sort();
}

/** Every key of queue `name` (unsharded). */
const allKeys = async (name: string) => (await raw.keys(`{rota:${name}}:*`)).sort();

describe('deduplication', () => {
  it('answers the job that holds the key until it ends, then adds a new one', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const a = await q.submit({ task: 't', args: 1, dedup: { key: 'report:7' } });
    expect(a.deduplicated).toBeUndefined();
    expect(a.dedupKey).toBe('report:7');
    const b = await q.submit({ task: 't', args: 2, dedup: { key: 'report:7' } });
    expect(b.id).toBe(a.id);
    expect(b.deduplicated).toBe(true);
    expect(b.args).toBe(1);
    expect((await q.counts()).waiting).toBe(1);
    const stored = await q.getJob(a.id);
    expect(stored).toMatchObject({ dedupKey: 'report:7', dedupUntil: 'end' });
    expect(stored!.deduplicated).toBeUndefined();
    expect(await dedupKeys(name)).toEqual([`{rota:${name}}:dd:7:defaultreport:7`]);

    const done: Job[] = [];
    const w = openWorker(name, { t: async () => 'ok' });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 1);
    // the key went with the job's end, in the finish that ended it
    await eventually(async () => (await q.getJob(a.id))?.state === 'success');
    expect(await dedupKeys(name)).toEqual([]);
    const c = await q.submit({ task: 't', args: 3, dedup: { key: 'report:7' } });
    expect(c.id).not.toBe(a.id);
    expect(c.deduplicated).toBeUndefined();
  });

  it('scopes a key to its group, exactly, whatever the group and key hold', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const jobs = await q.submitBulk([
      { task: 't', group: 'a:b', dedup: { key: 'c' } },
      { task: 't', group: 'a', dedup: { key: 'b:c' } },
      { task: 't', group: 'a', dedup: { key: 'c' } },
      { task: 't', group: 'b', dedup: { key: 'c' } },
      { task: 't', group: 'a', dedup: { key: 'b:c' } },
    ]);
    expect(new Set(jobs.map((j) => j.id)).size).toBe(4);
    expect(jobs[4].id).toBe(jobs[1].id);
    expect(jobs.map((j) => j.deduplicated ?? false)).toEqual([false, false, false, false, true]);
    expect((await dedupKeys(name)).length).toBe(4);
    // any text: the group's length is counted in bytes, and a key may hold NUL, newlines, `:`
    const odd = await q.submitBulk([
      { task: 't', group: 'ü', dedup: { key: '\u0000:\nk' } },
      { task: 't', group: 'ü', dedup: { key: '\u0000:\nk' } },
      { task: 't', group: 'üü', dedup: { key: '\u0000:\nk' } },
    ]);
    expect(odd[1].id).toBe(odd[0].id);
    expect(odd[2].id).not.toBe(odd[0].id);
    expect(await raw.get(`{rota:${name}}:dd:2:ü\u0000:\nk`)).toBe(`e${odd[0].id}`);
    expect(await raw.get(`{rota:${name}}:dd:4:üü\u0000:\nk`)).toBe(`e${odd[2].id}`);
  });

  it('with until start, holds while the job waits, and lets a new one in once it runs', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const spec: SubmitSpec = { task: 'slow', dedup: { key: 'k', until: 'start' } };
    const a = await q.submit(spec);
    expect((await q.submit(spec)).id).toBe(a.id);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const w = openWorker(name, { slow: () => held });
    await eventually(async () => (await q.getJob(a.id))?.state === 'running');
    const b = await q.submit(spec);
    expect(b.id).not.toBe(a.id);
    expect(b.deduplicated).toBeUndefined();
    // the running job no longer holds the key, and its end does not release the new holder's
    release();
    const done: Job[] = [];
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.some((j) => j.id === a.id));
    const key = `{rota:${name}}:dd:7:defaultk`;
    await eventually(async () => (await q.getJob(b.id))?.state === 'success');
    expect(await raw.get(key)).toBeNull();
  });

  it('throttles: one job per key per TTL, whatever its state, then a new one', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const spec: SubmitSpec = { task: 't', dedup: { key: 'mail', ttl: 600_000 } };
    const a = await q.submit(spec);
    expect(a.dedupUntil).toBe('ttl');
    expect(a.dedupExpires).toBe(a.submitted + 600_000);
    const done: Job[] = [];
    const w = openWorker(name, { t: async () => 1 });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 1);
    await eventually(async () => (await q.getJob(a.id))?.state === 'success');
    // ended, the job still holds its key until the TTL runs out
    expect(await q.submit(spec)).toMatchObject({ id: a.id, deduplicated: true, state: 'success' });
    const key = `{rota:${name}}:dd:7:defaultmail`;
    expect(await raw.pttl(key)).toBeGreaterThan(500_000);
    // (the TTL run out: shortened, rather than waited for)
    await raw.pexpire(key, 1);
    await eventually(async () => (await raw.exists(key)) === 0);
    const b = await q.submit(spec);
    expect(b.id).not.toBe(a.id);
    expect(b.deduplicated).toBeUndefined();
  });

  it('extend restarts the TTL from the duplicate', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const key = `{rota:${name}}:dd:7:defaultx`;
    const a = await q.submit({ task: 't', dedup: { key: 'x', ttl: 1_000 } });
    expect(await raw.pttl(key)).toBeLessThanOrEqual(1_000);
    const b = await q.submit({ task: 't', dedup: { key: 'x', ttl: 60_000, extend: true } });
    expect(b.id).toBe(a.id);
    expect(await raw.pttl(key)).toBeGreaterThan(50_000);
    expect((await q.getJob(a.id))!.dedupExpires).toBeGreaterThan(a.submitted + 50_000);
  });

  it('debounces: a duplicate replaces a delayed job’s args and due time, and one with none makes it wait now', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const a = await q.submit({ task: 't', args: { v: 1 }, delay: 60_000, dedup: { key: 'd', replace: true } });
    expect(a.state).toBe('delayed');
    const b = await q.submit({ task: 't', args: { v: 2 }, delay: 120_000, dedup: { key: 'd', replace: true } });
    expect(b.id).toBe(a.id);
    expect(b.deduplicated).toBe('replaced');
    expect(b.args).toEqual({ v: 2 });
    expect((await streamEvents(name)).filter((e) => e.event === 'deduplicated').map((e) => [e.id, e.state, e.dedup])).toEqual([
      [a.id, 'delayed', { key: 'd', replaced: true }],
    ]);
    expect(b.runAt).toBeGreaterThanOrEqual(a.submitted + 120_000);
    expect(Number(await raw.zscore(`{rota:${name}}:delayed`, a.id))).toBe(b.runAt);
    expect((await q.counts()).delayed).toBe(1);
    // without a due time the replaced job waits now
    const c = await q.submit({ task: 't', args: { v: 3 }, dedup: { key: 'd', replace: true } });
    expect(c).toMatchObject({ id: a.id, deduplicated: 'replaced', state: 'waiting', args: { v: 3 } });
    expect(c.runAt).toBeUndefined();
    const counts = await q.counts();
    expect([counts.delayed, counts.waiting]).toEqual([0, 1]);
    const ran: unknown[] = [];
    const w = openWorker(name, { t: async ({ args }) => void ran.push(args) });
    const done: Job[] = [];
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 1);
    expect(ran).toEqual([{ v: 3 }]);
  });

  it('replaces a waiting job’s args in its place, only when the priorities match', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const a = await q.submit({ task: 't', args: 1, dedup: { key: 'w', replace: true } });
    const b = await q.submit({ task: 't', args: 2, priority: 'high', dedup: { key: 'w', replace: true } });
    expect(b).toMatchObject({ id: a.id, deduplicated: true, args: 1, priority: 'low' });
    const c = await q.submit({ task: 't', args: 3, delay: 60_000, dedup: { key: 'w', replace: true } });
    expect(c).toMatchObject({ id: a.id, deduplicated: 'replaced', args: 3, state: 'waiting' });
    expect(await raw.lrange(`{rota:${name}}:g:default:l`, 0, -1)).toEqual([a.id]);
  });

  it('answers per job in a bulk, duplicates inside the bulk included', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const first = await q.submit({ task: 't', dedup: { key: 'old' } });
    const jobs = await q.submitBulk([
      { task: 't', args: 'a', dedup: { key: 'new' } },
      { task: 't', args: 'b', dedup: { key: 'old' } },
      { task: 't', args: 'c' },
      { task: 't', args: 'd', dedup: { key: 'new' } },
      { task: 't', args: 'e', delay: 10, dedup: { key: 'later' } },
    ]);
    expect(jobs.map((j) => j.deduplicated ?? false)).toEqual([false, true, false, true, false]);
    expect(jobs[1].id).toBe(first.id);
    expect(jobs[3].id).toBe(jobs[0].id);
    expect(jobs[3].args).toBe('a');
    const counts = await q.counts();
    expect(counts.waiting + counts.delayed).toBe(4);
    // each duplicate is a `deduplicated` event of the job that holds its key
    const events = (await streamEvents(name)).filter((e) => e.event === 'deduplicated');
    expect(events.map((e) => [e.id, e.state, e.dedup])).toEqual([
      [first.id, 'waiting', { key: 'old', replaced: false }],
      [jobs[0].id, 'waiting', { key: 'new', replaced: false }],
    ]);
  });

  it('a caller-given id that exists wins over the dedup key', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const a = await q.submit({ task: 't', id: 'mine' });
    const b = await q.submit({ task: 't', id: 'mine', dedup: { key: 'k' } });
    expect(b.id).toBe('mine');
    expect(b.deduplicated).toBeUndefined();
    expect(a.dedupKey).toBeUndefined();
    expect(await dedupKeys(name)).toEqual([]);
  });

  it('releases the key when the job is cancelled, deleted or cleaned', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const a = await q.submit({ task: 't', dedup: { key: 'c' } });
    const d = await q.submit({ task: 't', dedup: { key: 'd' } });
    const t = await q.submit({ task: 't', dedup: { key: 't', ttl: 600_000 } });
    expect((await dedupKeys(name)).length).toBe(3);
    expect(await q.cancel(a.id)).toBe('cancelled');
    expect(await q.deleteJobs({ ids: [d.id] })).toMatchObject({ done: 1 });
    expect(await dedupKeys(name)).toEqual([`{rota:${name}}:dd:7:defaultt`]);
    // a throttle's key outlives its job's end, not its job
    expect(await q.cancel(t.id)).toBe('cancelled');
    expect((await dedupKeys(name)).length).toBe(1);
    expect(await q.clean({ state: 'cancelled' })).toBe(2);
    expect(await dedupKeys(name)).toEqual([]);
    expect((await q.submit({ task: 't', dedup: { key: 't', ttl: 600_000 } })).id).not.toBe(t.id);
  });

  it('does not release a key another job holds now', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const a = await q.submit({ task: 't', dedup: { key: 'k', until: 'start' } });
    await q.cancel(a.id);
    const b = await q.submit({ task: 't', dedup: { key: 'k' } });
    expect(b.id).not.toBe(a.id);
    await q.clean({ state: 'cancelled' });
    expect(await raw.get(`{rota:${name}}:dd:7:defaultk`)).toBe(`e${b.id}`);
  });

  it('takes over a key whose holder is gone, and replaces no holder already taken', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const a = await q.submit({ task: 't', dedup: { key: 'gone' } });
    // (its hash lost by whatever means: the key it left names no job)
    await raw.del(`{rota:${name}}:j:${a.id}`);
    const b = await q.submit({ task: 't', dedup: { key: 'gone' } });
    expect(b.id).not.toBe(a.id);
    expect(await raw.get(`{rota:${name}}:dd:7:defaultgone`)).toBe(`e${b.id}`);

    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    openWorker(name, { slow: () => held, t: async () => undefined });
    const c = await q.submit({ task: 'slow', args: 1, dedup: { key: 'busy', replace: true } });
    await eventually(async () => (await q.getJob(c.id))?.state === 'running');
    const d = await q.submit({ task: 'slow', args: 2, dedup: { key: 'busy', replace: true } });
    expect(d).toMatchObject({ id: c.id, deduplicated: true, args: 1, state: 'running' });
    release();
  });

  it('refuses bad dedup options with a ValidationError naming the field, writing nothing', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    await q.submit({ task: 'warm' });
    const before = await allKeys(name);
    const bad: Array<[unknown, string]> = [
      [{ key: '' }, 'dedup.key'],
      [{ key: 'é'.repeat(101) }, 'dedup.key'],
      [{ key: 7 }, 'dedup.key'],
      [{}, 'dedup.key'],
      [{ key: 'k', ttl: 0 }, 'dedup.ttl'],
      [{ key: 'k', ttl: 1.5 }, 'dedup.ttl'],
      [{ key: 'k', ttl: 2 ** 31 }, 'dedup.ttl'],
      [{ key: 'k', until: 'never' }, 'dedup.until'],
      [{ key: 'k', until: 'ttl' }, 'dedup.until'],
      [{ key: 'k', extend: true }, 'dedup.extend'],
      [{ key: 'k', replace: 'yes' }, 'dedup.replace'],
      [{ key: 'k', tll: 5 }, 'dedup'],
      ['k', 'dedup'],
    ];
    for (const [dedup, field] of bad) {
      const err = await q.submit({ task: 't', dedup } as unknown as SubmitSpec).catch((e: unknown) => e);
      expect(err, JSON.stringify(dedup)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, JSON.stringify(dedup)).toBe(field);
    }
    const bulk = await q
      .submitBulk([
        { task: 't', dedup: { key: 'ok' } },
        { task: 't', dedup: { key: 'k', ttl: -1 } },
      ])
      .catch((e: unknown) => e);
    expect((bulk as ValidationError).field).toBe('specs[1].dedup.ttl');
    expect(await allKeys(name)).toEqual(before);
  });

  it('keeps a sharded queue’s keys in their group’s shard, and moves them with their jobs in a reshard', async () => {
    const name = uniqueQueue();
    const groups = Array.from({ length: 8 }, (_, i) => `tenant-${i}`);
    const specs = (tag: string): SubmitSpec[] =>
      groups.flatMap((group) => [
        { task: 't', group, args: tag, dedup: { key: 'same' } },
        { task: 't', group, args: tag, delay: 600_000, dedup: { key: 'later', ttl: 600_000, replace: true } },
      ]);
    let q = openQueue(name, { shards: 2 });
    const first = await q.submitBulk(specs('a'));
    expect(new Set(first.map((j) => j.id)).size).toBe(first.length);
    const keysIn = async (shards: number) => {
      const out: string[] = [];
      for (let i = 0; i <= shards; i++) {
        for (const k of await raw.keys(`${shardTag(name, i, shards)}:dd:*`)) out.push(`${i} ${k.slice(k.indexOf(':dd:') + 4)}`);
      }
      return out.sort();
    };
    const expected = (shards: number) =>
      groups
        .flatMap((g) => [`${shardOfGroup(g, shards)} ${g.length}:${g}same`, `${shardOfGroup(g, shards)} ${g.length}:${g}later`])
        .sort();
    expect(await keysIn(2)).toEqual(expected(2));
    expect((await q.submitBulk(specs('b'))).map((j) => j.id)).toEqual(first.map((j) => j.id));
    await q.close();

    const ttlBefore = await raw.pttl(`${shardTag(name, shardOfGroup('tenant-0', 2), 2)}:dd:8:tenant-0later`);
    await reshard(redisUrl(), name, { to: 3, batch: 5 });
    expect(await keysIn(3)).toEqual(expected(3));
    const ttlAfter = await raw.pttl(`${shardTag(name, shardOfGroup('tenant-0', 3), 3)}:dd:8:tenant-0later`);
    expect(ttlAfter).toBeGreaterThan(0);
    expect(ttlAfter).toBeLessThanOrEqual(ttlBefore);
    q = openQueue(name, { shards: 3 });
    const again = await q.submitBulk(specs('c'));
    expect(again.map((j) => j.id)).toEqual(first.map((j) => j.id));
    // the delayed ones were replaced where they are now
    expect(again.filter((j) => j.deduplicated === 'replaced').map((j) => j.args)).toEqual(groups.map(() => 'c'));
  });
});

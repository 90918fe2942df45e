/**
 * Deduplication under faults: real executor processes killed with SIGKILL mid-run, a private
 * redis-server. A dedup key is taken in the submit's script and released in the script that ends
 * its job (finish, or the recovery of a lost lease), so no process can die between a job's end and
 * its key's release, nor between a job's write and its key's: these tests check that what each
 * script leaves holds whoever dies when (executors mid-run, a producer mid-stream of bulks).
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { executorScript } from '../fixtures/chaos.js';
import { readRuns } from '../fixtures/runs.js';
import { NodeProcess } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { eventually } from '../helpers/wait.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(): Promise<{ url: string; c: Redis; q: Queue; name: string }> {
  const server = await RedisServer.start();
  cleanups.push(() => server.destroy());
  const c = new Redis(server.url, { maxRetriesPerRequest: null });
  c.on('error', () => {});
  cleanups.push(() => c.disconnect());
  const name = `dd-${Date.now().toString(36)}`;
  const q = new Queue(name, { connection: server.url });
  cleanups.push(() => q.close());
  return { url: server.url, c, q, name };
}

function executor(url: string, name: string, id: string): NodeProcess {
  const p = new NodeProcess(executorScript(), [], {
    REDIS_URL: url,
    QUEUE: name,
    ID: id,
    CONCURRENCY: '4',
    LEASE_MS: '1000',
    RETRY_DELAY: '50',
    REPORT: '1',
    KEEP_ALL: '1',
  });
  cleanups.push(() => p.kill());
  return p;
}

describe('deduplication under kill -9', () => {
  it('a key holds through its job’s lost runs and retries, and goes with its end: one job per key, each run once more only where killed', async () => {
    const { url, c, q, name } = await setup();
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    const first = await q.submitBulk(keys.map((key) => ({ task: 'work', args: { ms: 600 }, maxRetries: 5, dedup: { key } })));
    const a = executor(url, name, 'exec-a');
    await a.waitFor((m) => m.type === 'started');
    await a.kill();
    // the killed executor's runs still hold their keys (running, then stuck once recovered)
    const again = await q.submitBulk(keys.map((key) => ({ task: 'work', args: { ms: 1 }, dedup: { key } })));
    expect(again.map((j) => j.id)).toEqual(first.map((j) => j.id));
    expect(again.every((j) => j.deduplicated === true)).toBe(true);
    const b = executor(url, name, 'exec-b');
    await b.waitFor((m) => m.type === 'ready');
    // while they are retried, every duplicate still meets its first job
    const during = await q.submitBulk(keys.map((key) => ({ task: 'work', args: { ms: 1 }, dedup: { key } })));
    expect(during.map((j) => j.id)).toEqual(first.map((j) => j.id));
    await eventually('every job done', async () => (await q.counts()).success === keys.length, 30_000);
    const counts = await q.counts();
    expect(counts.waiting + counts.delayed + counts.stuck + counts.failed).toBe(0);
    expect(await c.keys(`{rota:${name}}:dd:*`)).toEqual([]);
    const runs = await readRuns(c, name);
    for (const j of first) {
      const execs = runs.get(j.id) ?? [];
      // a run killed with exec-a, then the one that counted; never one more
      expect(execs.length).toBeGreaterThanOrEqual(1);
      expect(execs.filter((e) => e.worker === 'exec-b').length).toBe(1);
    }
    const next = await q.submitBulk(keys.map((key) => ({ task: 'work', args: { ms: 1 }, dedup: { key } })));
    expect(next.some((j, i) => j.id === first[i].id)).toBe(false);
  }, 90_000);

  it('a job that fails for good when its executor dies releases its key in the recovery that fails it', async () => {
    const { url, c, q, name } = await setup();
    const job = await q.submit({ task: 'work', args: { ms: 60_000 }, maxRetries: 0, dedup: { key: 'once' } });
    const a = executor(url, name, 'exec-a');
    await a.waitFor((m) => m.type === 'started' && m.id === job.id);
    await a.kill();
    const key = `{rota:${name}}:dd:7:defaultonce`;
    expect(await c.get(key)).toBe(`e${job.id}`);
    expect((await q.submit({ task: 'work', dedup: { key: 'once' } })).id).toBe(job.id);
    const b = executor(url, name, 'exec-b');
    await b.waitFor((m) => m.type === 'ready');
    await eventually('the job failed', async () => (await q.getJob(job.id))?.state === 'failed', 30_000);
    // (one script failed the job and released its key: never one without the other)
    expect(await c.exists(key)).toBe(0);
    const fresh = await q.submit({ task: 'work', args: { ms: 1 }, dedup: { key: 'once' } });
    expect(fresh.id).not.toBe(job.id);
    await eventually('the new job ran', async () => (await q.getJob(fresh.id))?.state === 'success', 30_000);
    expect(await c.exists(key)).toBe(0);
  }, 60_000);

  it('a producer killed mid-stream leaves every key naming one pending job, and no job without its key', async () => {
    const { url, c, q, name } = await setup();
    const producer = new NodeProcess(new URL('../fixtures/dedup-producer.ts', import.meta.url).pathname, [], {
      REDIS_URL: url,
      QUEUE: name,
      KEYS: '10',
    });
    cleanups.push(() => producer.kill());
    await producer.waitFor((m) => m.type === 'submitted' && Number(m.n) >= 5, 60_000);
    await producer.kill();
    expect(producer.received().filter((m) => m.type === 'error')).toEqual([]);
    // (each submit is one script: whatever bulk the kill cut, no key is half taken)
    const jobs = await q.jobs({ state: 'delayed', limit: 1000 });
    const waiting = await q.jobs({ state: 'waiting', limit: 1000 });
    expect(jobs.length).toBe(20);
    expect(waiting.length).toBe(20);
    for (const j of [...jobs, ...waiting]) {
      const key = `{rota:${name}}:dd:1:${j.group}${j.dedupKey}`;
      expect(await c.get(key)).toBe(`${j.dedupKey!.startsWith('plain-') ? 's' : 'e'}${j.id}`);
    }
    expect((await c.keys(`{rota:${name}}:dd:*`)).length).toBe(40);
    // the debounced jobs hold the args of the last bulk applied, all of them (one script a bulk)
    expect(new Set(jobs.map((j) => j.args)).size).toBe(1);
    expect(jobs.every((j) => j.dedupKey!.startsWith('debounce-'))).toBe(true);
    const counts = await q.counts();
    expect([counts.delayed, counts.waiting]).toEqual([20, 20]);
  }, 90_000);
});

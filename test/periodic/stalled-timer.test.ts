import { afterAll, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue } from '../../src/index.js';
import { NodeProcess } from '../helpers/processes.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';
import { until } from '../helpers/wait.js';

const CHILD = new URL('../fixtures/stalled-replica.ts', import.meta.url).pathname;
const procs: NodeProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill();
});

describe('a scheduler replica with a misbehaving timer', () => {
  it('disables a task whose timer does not advance, keeps every other task on time, and stops on SIGTERM', async () => {
    const name = uniqueQueue('stalled');
    const tasks = new PeriodicTasks(name, { connection: redisUrl() });
    const queue = new Queue(name, { connection: redisUrl() });
    const STALL = '*:*:0/1 UTC'; // made to stall in the child
    const SLOW = 'every 1s'; // made slow in the child: 1 ms per occurrence
    await tasks.upsert({ id: 'stalled', task: 'noop', timer: STALL, overlap: 'allow' });
    // A catch-up walk from ten hours ago (36,000 occurrences) over a timer that takes 1 ms per occurrence.
    const longAgo = Date.now() - 36_000_000;
    const past = new PeriodicTasks(name, { connection: redisUrl(), now: () => longAgo });
    await past.upsert({ id: 'slow', task: 'noop', timer: SLOW, overlap: 'allow', catchup: 'latest' });
    await past.close();
    for (let i = 0; i < 6; i++) await tasks.upsert({ id: `ok${i}`, task: 'noop', timer: '*:*:0/1', overlap: 'allow' });
    const events = new AbortController();
    let readToEnd = false;
    const failed: Array<{ id: string; task?: string; error?: string }> = [];
    const reading = (async () => {
      for await (const e of queue.events({ from: '0', signal: events.signal })) {
        if (e.event === 'periodic.failed') failed.push({ id: e.id, task: e.periodic?.task, error: e.error });
        if (e.id === 'after-the-replica') readToEnd = true;
      }
    })().catch(() => undefined);

    const child = new NodeProcess(CHILD, [redisUrl(), name, STALL, SLOW]);
    procs.push(child);
    await child.waitFor((m) => m.ready);
    const start = Date.now();
    // (until the stalled task is disabled, the slow one caught up, and every other one ran 5 s past the start)
    const second = Math.ceil(start / 1000) * 1000;
    await until(
      'the replica to settle every task',
      async () => {
        if ((await tasks.get('stalled'))!.enabled) return false;
        if (!(await tasks.runs('slow', { limit: 1000 })).some((r) => r.status === 'missed')) return false;
        for (let i = 0; i < 6; i++) {
          const runs = await tasks.runs(`ok${i}`, { limit: 1 });
          if (!(runs[0]?.jobId && runs[0].occurrence >= second + 5000)) return false;
        }
        return true;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    child.signal('SIGTERM');
    const closed = await child.waitFor<{ closed: { maxDelayMs: number } }>((m) => m.closed, 10_000);
    expect(await child.exited).toBe(0);
    const end = Date.now();

    // The stalled task: disabled, with a note, a failed entry in its history, a periodic.failed event.
    const stalled = (await tasks.get('stalled'))!;
    expect(stalled.enabled).toBe(false);
    expect(stalled.note).toMatch(/does not advance/);
    const history = await tasks.runs('stalled');
    expect(history.map((r) => r.status)).toEqual(['failed']);
    expect(history[0].error).toMatch(/does not advance/);
    // (an event after every one of the replica's: once it is read, so are they)
    await queue.submit({ id: 'after-the-replica', task: 'noop' });
    await until('the events read to the end', () => readToEnd);
    events.abort();
    await reading;
    expect(failed.filter((f) => f.task === 'stalled')).toHaveLength(1);

    // The slow task: caught up with one run and one missed entry, never the same occurrence twice.
    const slow = await tasks.runs('slow', { limit: 1000 });
    const missed = slow.filter((r) => r.status === 'missed');
    expect(missed.length).toBeGreaterThanOrEqual(1);
    const jobs = new Set(slow.filter((r) => r.jobId).map((r) => r.occurrence));
    for (const m of missed) {
      expect(jobs.has(m.occurrence)).toBe(false);
      expect(jobs.has(m.until!)).toBe(false);
    }

    // Every other task: each second between start and SIGTERM has its occurrence.
    for (let i = 0; i < 6; i++) {
      const occ = new Set((await tasks.runs(`ok${i}`, { limit: 1000 })).filter((r) => r.jobId).map((r) => r.occurrence));
      for (let o = Math.ceil(start / 1000) * 1000 + 1000; o <= end - 3000; o += 1000)
        expect(occ.has(o), `ok${i}@${o}`).toBe(true);
    }
    console.log(`stalled timer: longest event-loop block in the replica ${closed.closed.maxDelayMs.toFixed(1)} ms`);
    await tasks.close();
    await queue.close();
  }, 40_000);
});

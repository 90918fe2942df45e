/**
 * Jitter (issue 43): three scheduler replicas in separate processes on the server clock, 20 tasks
 * firing every second with a jitter of 900 ms: each occurrence submitted once, each due time in
 * [occurrence, occurrence + jitter), each submitted no earlier than its due time; and a rerun of
 * the same task ids (another queue, one replica on an injected clock) gives the same due times.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, Scheduler } from '../../src/index.js';
import { jitterOffset } from '../../src/periodic/jitter.js';
import { parseEntry } from '../../src/queue/events.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

const CHILD = new URL('../fixtures/scheduler-replica.ts', import.meta.url).pathname;
const procs: NodeProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill();
  await closeAll();
});

const TASKS = 20;
const JITTER = 900;
const ids = Array.from({ length: TASKS }, (_, i) => `j${i}`);
const def = (id: string) => ({ id, task: 'noop', timer: '*:*:*', jitter: JITTER, overlap: 'allow' as const });

/** Every run of the tasks as `job id -> { occurrence, due, submitted }`. */
async function runsOf(tasks: PeriodicTasks) {
  const out = new Map<string, { id: string; occurrence: number; due?: number; submitted?: number }>();
  for (const id of ids) {
    for (const r of await tasks.runs(id, { limit: 1000 })) {
      out.set(r.jobId!, { id, occurrence: r.occurrence, due: r.due, submitted: r.submitted });
    }
  }
  return out;
}

describe('jitter', () => {
  it('3 replicas, 200 occurrences: each submitted once, due inside [occurrence, occurrence + jitter), the same due times on a rerun', async () => {
    const name = uniqueQueue('jitter');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    const live = await Promise.all(
      ['a', 'b', 'c'].map(async (r) => {
        // (5 tasks per claim: the 20 tasks are spread over the replicas)
        const p = new NodeProcess(CHILD, [redisUrl(), name, r, '5']);
        procs.push(p);
        await p.waitFor((m) => m.ready, 90_000);
        return p;
      }),
    );
    for (const id of ids) await tasks.upsert(def(id));
    const first = Math.max(...(await Promise.all(ids.map(async (id) => (await tasks.get(id))!.nextrun!))));
    const last = first + 9000;
    // Wait until every task has run its 10 occurrences from `first` to `last`.
    await eventually(async () => {
      for (const id of ids) {
        const job = await queue.getJob(`${id}@${last}`);
        if (!job) return false;
      }
      return true;
    }, 30_000);
    for (const p of live) {
      p.send({ close: true });
      await p.exited;
    }

    const runs = await runsOf(tasks);
    const adds = new Map<string, number>();
    for (const [sid, fields] of await rawClient().xrange(queue.keys.events, '-', '+')) {
      for (const e of parseEntry(sid, fields)) if (e.state === 'waiting') adds.set(e.id, (adds.get(e.id) ?? 0) + 1);
    }
    let checked = 0;
    let spread = 0;
    for (const id of ids) {
      for (let o = first; o <= last; o += 1000) {
        const jobId = `${id}@${o}`;
        expect(adds.get(jobId), jobId).toBe(1);
        const r = runs.get(jobId)!;
        expect(r.occurrence).toBe(o);
        // (an offset of 0 records no due time: due at the occurrence)
        const due = r.due ?? o;
        expect(due).toBeGreaterThanOrEqual(o);
        expect(due).toBeLessThan(o + JITTER);
        expect(due).toBe(o + jitterOffset(id, o, JITTER));
        expect(r.submitted!).toBeGreaterThanOrEqual(due);
        spread = Math.max(spread, due - o);
        checked++;
      }
    }
    expect(checked).toBe(200);
    for (const [jobId, n] of adds) expect(n, jobId).toBe(1);
    // the offsets are spread over the jitter, not all 0
    expect(spread).toBeGreaterThan(JITTER / 2);

    // A rerun: the same task ids on another queue, planned from the same first occurrence, with
    // one replica whose clock is past the last: the same due times.
    const rerun = uniqueQueue('jitter-rerun');
    const tasks2 = track(new PeriodicTasks(rerun, { connection: redisUrl(), now: () => first - 1 }));
    for (const id of ids) await tasks2.upsert({ ...def(id), catchup: 'all' });
    const s = track(new Scheduler(rerun, { connection: redisUrl(), now: () => last + JITTER, misfireGraceMs: 60_000 }));
    await s.start();
    const queue2 = track(new Queue(rerun, { connection: redisUrl() }));
    await eventually(async () => {
      for (const id of ids) if ((await queue2.getJob(`${id}@${last}`))?.state !== 'waiting') return false;
      return true;
    });
    const again = await runsOf(tasks2);
    for (const id of ids) {
      for (let o = first; o <= last; o += 1000) {
        expect(again.get(`${id}@${o}`)?.due, `${id}@${o}`).toBe(runs.get(`${id}@${o}`)!.due);
      }
    }
    // (some 45 s, most of it the three processes starting; more on a loaded machine)
  }, 150_000);
});

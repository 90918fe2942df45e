import { afterAll, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { NodeProcess } from '../helpers/processes.js';
import { rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';
import { sleep, until } from '../helpers/wait.js';

const CHILD = new URL('../fixtures/scheduler-replica.ts', import.meta.url).pathname;
const procs: NodeProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill();
});

async function replica(name: string, id: string): Promise<NodeProcess> {
  const p = new NodeProcess(CHILD, [redisUrl(), name, id, '20']);
  procs.push(p);
  await p.waitFor((m) => m.ready);
  return p;
}

describe('scheduler replicas', () => {
  it('5 replicas in separate processes, one killed -9 and restarted every 5 s: every occurrence submitted exactly once', async () => {
    const name = uniqueQueue('replicas');
    const tasks = new PeriodicTasks(name, { connection: redisUrl() });
    const queue = new Queue(name, { connection: redisUrl() });
    const live = await Promise.all(Array.from({ length: 5 }, (_, i) => replica(name, `r${i}`)));
    const TASKS = 200;
    for (let i = 0; i < TASKS; i++) {
      await tasks.upsert({ id: `t${i}`, task: 'noop', timer: '*:*:0/2', overlap: 'allow' });
    }
    const start = Date.now();
    const firstOcc = Math.ceil((start + 1) / 2000) * 2000;
    let killedHolding = 0;
    for (let k = 1; k <= 6; k++) {
      // Kill 400 ms before an occurrence, while replicas hold claims for it (claimed 2.5 s ahead,
      // 20 tasks per claim, so the 200 tasks are spread over the replicas).
      const at = Math.floor((start + k * 5000) / 2000) * 2000 - 400;
      await sleep(at - Date.now());
      const i = k % 5;
      await live[i].kill();
      live[i] = await replica(name, `r${i}`);
    }
    const end = start + 30_000;
    await sleep(end - Date.now());
    const lastOcc = Math.floor(end / 2000) * 2000;
    // (the claims of the last killed replica expire, TTL 6 s, and are fired by others: until every
    // occurrence up to the last is submitted)
    const expected = (lastOcc - firstOcc) / 2000 + 1;
    const watcher = rawClient();
    await until(
      'every occurrence up to the last submitted',
      async () => {
        const entries = (await watcher.xrange(queue.keys.events, '-', '+')) as Array<[string, string[]]>;
        const ids = new Set<string>();
        for (const [sid, fields] of entries) {
          for (const e of parseEntry(sid, fields)) {
            const at = Number(e.id.slice(e.id.indexOf('@') + 1));
            if (e.state === 'waiting' && at >= firstOcc && at <= lastOcc) ids.add(e.id);
          }
        }
        return ids.size === TASKS * expected;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    watcher.disconnect();
    for (const p of live) {
      p.send({ close: true });
      await p.exited;
    }
    expect(expected).toBeGreaterThanOrEqual(14);

    // Count submissions from the events stream: one `waiting` change per job actually added.
    const redis = rawClient();
    const entries = (await redis.xrange(queue.keys.events, '-', '+')) as Array<[string, string[]]>;
    const adds = new Map<string, number>();
    for (const [sid, fields] of entries) {
      for (const e of parseEntry(sid, fields)) if (e.state === 'waiting') adds.set(e.id, (adds.get(e.id) ?? 0) + 1);
    }
    const perOccurrence = new Map<string, number>();
    let late = 0;
    for (let i = 0; i < TASKS; i++) {
      const runs = await tasks.runs(`t${i}`, { limit: 1000 });
      for (const r of runs) {
        expect(r.jobId).toBe(`t${i}@${r.occurrence}`);
        late = Math.max(late, r.submitted! - r.occurrence);
        if (r.submitted! - r.occurrence > 1000) killedHolding += 1;
        perOccurrence.set(r.jobId!, (perOccurrence.get(r.jobId!) ?? 0) + (adds.get(r.jobId!) ?? 0));
      }
      for (let o = firstOcc; o <= lastOcc; o += 2000) {
        expect(perOccurrence.get(`t${i}@${o}`), `t${i}@${o}`).toBe(1);
      }
    }
    for (const [id, n] of adds) expect(n, id).toBe(1);
    const counts = await queue.counts();
    expect(counts.waiting).toBe(adds.size);
    console.log(
      `replicas: ${TASKS} tasks x ${expected} occurrences checked, ${adds.size} jobs, max lateness ${late} ms, ${killedHolding} occurrences fired late by a takeover`,
    );
    await redis.quit();
    await tasks.close();
    await queue.close();
  }, 150_000);
});

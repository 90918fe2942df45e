/**
 * A take that a loaded server answers late, on an unsharded queue: its slots stay its own until
 * it is answered (there is no other shard to serve meanwhile), so the jobs it brings are started,
 * not handed back as `waiting` again to make room for a finish call's take sent in between (the
 * second `waiting` event a fan-out child showed in test/queue/fanout-faults.test.ts under load).
 * The server is held with CLIENT PAUSE WRITE, which queues the executor's take and finish calls.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, type QueueEvent, Worker } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { closeAll, eventually, privateRedis, track, uniqueQueue, until } from '../helpers/setup.js';

const own = privateRedis();
afterEach(() => closeAll());

describe('a take answered late on an unsharded queue', () => {
  it('starts every job it brings, and hands none back', async () => {
    const name = uniqueQueue('late-take');
    const q = track(new Queue(name, { connection: own.server.url }));
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const started: string[] = [];
    const w = track(
      new Worker(
        name,
        {
          held: async ({ job }) => {
            started.push(job.id);
            await gate;
          },
          quick: ({ job }) => void started.push(job.id),
        },
        { connection: own.server.url, concurrency: 2 },
      ),
    );
    let completed = 0;
    w.on('completed', () => completed++);
    await w.run();
    const held = await q.submit({ task: 'held' });
    await eventually(async () => started.includes(held.id));
    // The job comes due while the server holds every write: the executor's take waits in its queue.
    const late = await q.submit({ task: 'quick', delay: 300 });
    await own.admin.call('CLIENT', 'PAUSE', '2500', 'WRITE');
    // (the take is sent at the due time and waits; past 250 ms the old code gave its slot up)
    await eventually(async () => Date.now() >= late.runAt! + 700, 5000);
    // The held run ends: its finish call, queued behind the take, takes for the slots it sees free.
    open();
    await until(w, 'completed', () => completed === 2, 20_000);
    const events = (await own.admin.xrange(`{rota:${name}}:events`, '-', '+')) as Array<[string, string[]]>;
    const waiting = events
      .flatMap(([sid, f]) => parseEntry(sid, f) as QueueEvent[])
      .filter((e) => e.id === late.id && e.state === 'waiting');
    expect(waiting).toHaveLength(1);
    expect(started.filter((id) => id === late.id)).toHaveLength(1);
  }, 40_000);
});

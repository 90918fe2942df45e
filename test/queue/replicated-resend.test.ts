/**
 * `replicated` durability through a failover that loses a finish: the executor's first send was
 * applied on the old primary but not replicated; the promoted replica holds the job as it was
 * before the finish, and recovers it there. The resend is refused, and its WAIT passes (the new
 * primary has a replica by then): the executor must not report `completed`, since no replica
 * has that outcome. The failover is emulated on one server: its queue keys are put back as they
 * were before the finish (what the replica had), then a replica is attached.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LeaseLostError, Queue, ReplicationError, Worker } from '../../src/index.js';
import { leaseJobId } from '../../src/redis/keys.js';
import { RedisServer } from '../helpers/redis-server.js';
import { closeAll, eventually, track, uniqueQueue } from '../helpers/setup.js';
import { storeOf } from '../helpers/store.js';

const servers: RedisServer[] = [];
const clients: Redis[] = [];
afterEach(() => closeAll());
afterAll(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  for (const s of servers.splice(0)) await s.destroy();
});

describe('a replicated finish lost in a failover', () => {
  it('is not reported completed when its resend is refused on the new primary', async () => {
    const primary = await RedisServer.start();
    servers.push(primary);
    const raw = new Redis(primary.url);
    clients.push(raw);
    const name = uniqueQueue('resend');
    const q = track(new Queue(name, { connection: primary.url }));
    const { id } = await q.submit({ task: 'work' });
    let entered!: () => void;
    const running = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = track(
      new Worker(
        name,
        {
          work: async () => {
            entered();
            await gate;
            return 'done';
          },
        },
        { connection: primary.url, durability: 'replicated', replicaTimeoutMs: 200, leaseMs: 30_000 },
      ),
    );
    const completed: string[] = [];
    const lost: string[] = [];
    let replicationErrors = 0;
    w.on('completed', (job) => completed.push(job.id));
    w.on('error', (err) => {
      if (err instanceof LeaseLostError) lost.push(err.jobId);
      if (err instanceof ReplicationError) replicationErrors++;
    });
    await running;
    // What the replica holds: the queue as it was while the job ran.
    const pattern = `{rota:${name}}:*`;
    const snapshot = new Map<string, Buffer>();
    for (const key of await raw.keys(pattern)) {
      const dumped = await raw.dumpBuffer(key);
      if (dumped) snapshot.set(key, dumped);
    }
    release();
    await eventually(async () => replicationErrors > 0);
    // The failover: the new primary lacks the finish, and its recovery ended the run there.
    for (const key of await raw.keys(pattern)) if (!snapshot.has(key)) await raw.del(key);
    for (const [key, dumped] of snapshot) await raw.restore(key, 0, dumped, 'REPLACE');
    const store = storeOf(raw, name);
    for (const member of await raw.zrange(store.keys.leases, 0, -1))
      if (leaseJobId(member) === id) await raw.zadd(store.keys.leases, 1, member);
    const { recovered } = await store.recover({
      retryDelay: 600_000,
      maxLeases: 10,
      keepSucceededAgeMs: -1,
      keepFailedAgeMs: -1,
      maxRemoved: 0,
    });
    expect(recovered).toEqual([id]);
    // The new primary gets a replica: the resend's WAIT passes.
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    servers.push(replica);
    await eventually(async () => completed.length + lost.length > 0, 20_000);
    expect(completed).toEqual([]);
    expect(lost).toEqual([id]);
    expect((await q.getJob(id))?.state).toBe('stuck');
  }, 40_000);
});

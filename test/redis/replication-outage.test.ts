/**
 * `durability: 'replicated'` while the replica is away (detached with REPLICAOF NO ONE, attached
 * again later): the primary applies finishes whose WAIT times out. The jobs such a finish took
 * still run; an outcome sent again after the primary applied it is no lost lease (no
 * LeaseLostError, and the state its first send gave); and the report that an earlier run's
 * outcome is no longer leased does not abort a later run of the same job.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseLostError, ReplicationError, type Worker } from '../../src/index.js';
import { OUTCOME } from '../../src/redis/wire.js';
import { RedisServer } from '../helpers/redis-server.js';
import { closeAll, eventually, openQueue, openWorker, uniqueQueue, until } from '../helpers/setup.js';
import { finishRuns, settings, storeOf, takeRuns } from '../helpers/store.js';

let primary: RedisServer;
let replica: RedisServer;
let admin: Redis;
let replicaAdmin: Redis;

/** Resolves once the primary counts the replica online (until then WAIT counts none). */
async function inSync(): Promise<void> {
  await eventually(async () => /connected_slaves:1[\s\S]*state=online/.test(await admin.info('replication')), 20_000);
}

/** Attaches the replica again; it resyncs from the primary. */
async function attach(): Promise<void> {
  await replicaAdmin.replicaof('127.0.0.1', primary.port);
  await inSync();
}

beforeAll(async () => {
  // (a replica attached again resyncs at once, not after the default 5 s wait for more replicas)
  primary = await RedisServer.start({ args: ['--repl-diskless-sync-delay', '0'] });
  replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  admin = new Redis(primary.url);
  replicaAdmin = new Redis(replica.url);
  await inSync();
}, 30_000);

afterEach(async () => {
  await closeAll();
  await attach();
});

afterAll(async () => {
  admin?.disconnect();
  replicaAdmin?.disconnect();
  await replica?.destroy();
  await primary?.destroy();
});

/** The errors `w` emits, sorted into lease losses and the rest. */
function errorsOf(w: Worker): { leaseLost: string[]; replication: number } {
  const seen = { leaseLost: [] as string[], replication: 0 };
  w.on('error', (err) => {
    if (err instanceof LeaseLostError) seen.leaseLost.push(err.jobId);
    else if (err instanceof ReplicationError) seen.replication++;
  });
  return seen;
}

/** A promise and what settles it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe("durability 'replicated' while the replica is away", () => {
  it('runs the jobs a finish took though its WAIT timed out', async () => {
    const name = uniqueQueue('repl-out');
    const q = openQueue(name, { connection: primary.url, durability: 'replicated' });
    const aRuns = gate();
    const aMayEnd = gate();
    const calls: Record<string, number> = {};
    const w = openWorker(
      name,
      {
        t: async ({ job }) => {
          calls[job.id] = (calls[job.id] ?? 0) + 1;
          if (job.id === 'A') {
            aRuns.open();
            await aMayEnd.promise;
          }
          return job.id;
        },
      },
      { connection: primary.url, durability: 'replicated', replicaTimeoutMs: 200, concurrency: 1, leaseMs: 3000 },
    );
    const errors = errorsOf(w);
    await q.submitBulk(['A', 'B', 'C'].map((id) => ({ task: 't', id, maxRetries: 0 })));
    await aRuns.promise;
    await replicaAdmin.replicaof('NO', 'ONE');
    aMayEnd.open();
    // A's finish (which takes B in the same call) is applied, and its WAIT times out
    await until(w, 'error', () => errors.replication > 0);
    await new Promise((r) => setTimeout(r, 1500));
    await attach();
    const ended = await eventually(async () => {
      const jobs = await Promise.all(['A', 'B', 'C'].map((id) => q.getJob(id)));
      return jobs.every((j) => j && (j.state === 'success' || j.state === 'failed')) && jobs;
    }, 20_000);
    expect(ended.map((j) => [j?.id, j?.state, j?.error])).toEqual([
      ['A', 'success', undefined],
      ['B', 'success', undefined],
      ['C', 'success', undefined],
    ]);
    expect(calls).toEqual({ A: 1, B: 1, C: 1 });
    expect(errors.leaseLost).toEqual([]);
  });

  it('reports an outcome sent again after the primary applied it as what it ended in, not as a lost lease', async () => {
    const name = uniqueQueue('repl-out');
    const q = openQueue(name, { connection: primary.url });
    const runs = gate();
    const w = openWorker(
      name,
      {
        t: () => {
          runs.open();
          throw new Error('no');
        },
      },
      { connection: primary.url, durability: 'replicated', replicaTimeoutMs: 200 },
    );
    const errors = errorsOf(w);
    const failed: string[] = [];
    w.on('failed', (job) => failed.push(job.id));
    await replicaAdmin.replicaof('NO', 'ONE');
    await q.submit({ task: 't', id: 'F', maxRetries: 0 });
    await runs.promise;
    // the failure is applied, its WAIT times out, and it is sent again (refused: the job has ended)
    await until(w, 'error', () => errors.replication > 1);
    await attach();
    await eventually(async () => failed.length > 0 || errors.leaseLost.length > 0, 20_000);
    expect(failed).toEqual(['F']);
    expect(errors.leaseLost).toEqual([]);
    expect(await q.getJob('F')).toMatchObject({ state: 'failed', error: expect.stringContaining('no') });
  });

  it("does not abort a job's new run when its earlier run's outcome, still sent again, is no longer leased", async () => {
    const name = uniqueQueue('repl-out');
    const q = openQueue(name, { connection: primary.url });
    const secondReturned = gate();
    let call = 0;
    let aborted = false;
    const w = openWorker(
      name,
      {
        t: async ({ signal }) => {
          if (++call === 1) throw new Error('first run fails');
          // long enough for several heartbeats (every third of the lease), each holding the job
          // under both tokens; a lost lease ends it early
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 1500);
            signal.addEventListener('abort', () => {
              aborted = true;
              clearTimeout(timer);
              resolve();
            });
          });
          secondReturned.open();
          return 'ok';
        },
      },
      { connection: primary.url, durability: 'replicated', replicaTimeoutMs: 100, leaseMs: 1000, retryDelay: 1 },
    );
    const errors = errorsOf(w);
    await replicaAdmin.replicaof('NO', 'ONE');
    await q.submit({ task: 't', id: 'X', maxRetries: 1 });
    // (the second run returns; or it never comes, its retry lost)
    await Promise.race([secondReturned.promise, eventually(async () => (await q.getJob('X'))?.state === 'failed', 20_000)]);
    await attach();
    const job = await eventually(async () => {
      const j = await q.getJob('X');
      return j && (j.state === 'success' || j.state === 'failed') && j;
    }, 20_000);
    expect(aborted).toBe(false);
    expect(job).toMatchObject({ state: 'success', result: 'ok' });
    expect(errors.leaseLost).toEqual([]);
  });
});

describe('a take lost in a failover', () => {
  it('gives the job a lease token on the promoted replica that the lost take did not hold', async () => {
    const name = uniqueQueue('lost-take');
    const q = openQueue(name, { connection: primary.url });
    await q.submit({ task: 't', id: 'J', maxRetries: 0 });
    const offset = /master_repl_offset:(\d+)/.exec(await admin.info('replication'))![1];
    await eventually(async () => (await replicaAdmin.info('replication')).includes(`slave_repl_offset:${offset}`));
    // The replica is promoted with J waiting; the take on the old primary never reaches it.
    await replicaAdmin.replicaof('NO', 'ONE');
    const old = storeOf(admin, name);
    const promoted = storeOf(replicaAdmin, name);
    const [[, lostToken]] = await takeRuns(old, 1, settings('exec-old'));
    // (the promoted server's clock is past the lost take's millisecond, as after any failover)
    const lostMs = (await admin.time()).map(Number);
    await eventually(async () => {
      const [s, us] = (await replicaAdmin.time()).map(Number);
      return s * 1000 + Math.floor(us / 1000) > lostMs[0] * 1000 + Math.floor(lostMs[1] / 1000);
    });
    const [[id, token]] = await takeRuns(promoted, 1, settings('exec-new'));
    expect(id).toBe('J');
    expect(token).not.toBe(lostToken);
    // The executor of the lost take finishes J: the promoted primary refuses it as not leased,
    // and the run it leased ends with its own outcome.
    const lost = await finishRuns(promoted, [['J', lostToken, '+' + OUTCOME.success]], settings('exec-old'));
    expect(lost.states).toEqual(['']);
    const kept = await finishRuns(promoted, [['J', token, '+' + OUTCOME.success]], settings('exec-new'));
    expect(kept.states).toEqual(['success']);
  });
});

/**
 * Leases, driven through the scripts: a finish whose runs all hold their leases as they claim
 * needs no check against the job hashes; every other case (a cancel request, a start applied
 * that the run did not claim) is checked against them, and no lease entry outlives its run.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/index.js';
import { leaseJobId } from '../../src/redis/keys.js';
import { closeAll, openQueue, rawClient, uniqueQueue } from '../helpers/setup.js';
import { finishRuns, settings, startRuns, storeOf, takeRuns } from '../helpers/store.js';

const raws: Redis[] = [];
afterEach(async () => {
  await closeAll();
  for (const r of raws.splice(0)) r.disconnect();
});

/** A queue with `n` jobs submitted and taken by executor `exec-l`: its jobs as [id, token]. */
async function taken(n: number): Promise<{ q: Queue; raw: Redis; runs: Array<[string, string]> }> {
  const q = openQueue(uniqueQueue('lease'));
  const raw = rawClient();
  raws.push(raw);
  await q.submitBulk(Array.from({ length: n }, (_, i) => ({ task: 'x', group: `g${i}` })));
  return { q, raw, runs: await takeRuns(storeOf(raw, q.name), n, settings('exec-l')) };
}

function start(q: Queue, raw: Redis, runs: Array<[string, string]>) {
  return startRuns(storeOf(raw, q.name), runs);
}

/** Finishes `runs`, each as [id, token, outcome code]; answers the state each ended in. */
async function finish(q: Queue, raw: Redis, runs: Array<[string, string, string]>): Promise<string[]> {
  return (await finishRuns(storeOf(raw, q.name), runs, settings(''))).states;
}

/** The members of `leases` that are runs' (not the pad). */
const leases = async (q: Queue, raw: Redis) => (await raw.zrange(q.keys.leases, 0, -1)).filter((m) => leaseJobId(m) !== null);

/** A recovery pass: every expired lease, no stale marks of an executor, every finished job kept. */
const RECOVER = { retryDelay: 1000, maxLeases: 1000, keepSucceededAgeMs: -1, keepFailedAgeMs: -1, maxRemoved: 500 };

describe('leases', () => {
  it('name each run by token, condition and job id, and a finish claiming them as they are ends every run', async () => {
    const { q, raw, runs } = await taken(3);
    expect((await leases(q, raw)).sort()).toEqual(runs.map(([id, token]) => `${token}:${id}`).sort());
    await start(q, raw, [runs[2]]);
    expect(await leases(q, raw)).toContain(`${runs[2][1]}!${runs[2][0]}`);
    expect((await leases(q, raw)).map(leaseJobId).sort()).toEqual(runs.map(([id]) => id).sort());
    // the pad keeps the set a skiplist, with an expiry never reached
    expect(await raw.object('ENCODING', q.keys.leases)).toBe('skiplist');
    expect(await raw.zrangebyscore(q.keys.leases, 2 ** 52, '+inf')).toHaveLength(1);
    // two runs whose start was never sent, one started
    expect(
      await finish(q, raw, [
        [...runs[0], '+s'],
        [...runs[1], '+s'],
        [...runs[2], 's'],
      ]),
    ).toEqual(['success', 'success', 'success']);
    expect(await leases(q, raw)).toEqual([]);
    expect(await q.counts()).toMatchObject({ success: 3, scheduled: 0, running: 0 });
  });

  it('mark a cancel request, so that the run ends cancelled whatever its outcome', async () => {
    const { q, raw, runs } = await taken(1);
    const [id, token] = runs[0];
    await start(q, raw, runs);
    expect(await q.cancel(id)).toBe('cancelling');
    expect(await leases(q, raw)).toEqual([`${token}?${id}`]);
    // the heartbeat keeps the marked lease and reports the cancel
    const beat = await storeOf(raw, q.name).heartbeat({
      workerId: 'exec-l',
      leaseMs: 30_000,
      ttlMs: 60_000,
      info: {},
      held: [{ id, token }],
    });
    expect(beat).toMatchObject({ lost: [], cancel: [id] });
    expect(await finish(q, raw, [[id, token, 's']])).toEqual(['cancelled']);
    expect(await leases(q, raw)).toEqual([]);
    expect(await q.counts()).toMatchObject({ cancelled: 1, running: 0 });
  });

  it('are checked against the job when a run claims less than was applied: a start sent and applied, a wrong token', async () => {
    const { q, raw, runs } = await taken(2);
    await start(q, raw, runs);
    // the first claims its start was not sent, the second holds a stale token
    const [a, b] = runs;
    expect(
      await finish(q, raw, [
        [...a, '+s'],
        [b[0], String(Number(b[1]) + 1), 's'],
      ]),
    ).toEqual(['success', '']);
    expect(await leases(q, raw)).toEqual([`${b[1]}!${b[0]}`]);
    expect(await q.counts()).toMatchObject({ success: 1, running: 1, scheduled: 0 });
    expect(await finish(q, raw, [[...b, 's']])).toEqual(['success']);
    expect(await q.counts()).toMatchObject({ success: 2, running: 0 });
  });

  it('expired in `leases` are recovered, and a stale entry is dropped', async () => {
    const { q, raw, runs } = await taken(2);
    const k = q.keys;
    const [[a, aToken], [b, bToken]] = runs;
    await raw.zadd(k.leases, 1, `${aToken}:${a}`);
    // b's run ended, but an entry was left behind (nothing leaves one: the pass must still cope)
    expect(await finish(q, raw, [[b, bToken, '+s']])).toEqual(['success']);
    await raw.zadd(k.leases, 1, `${bToken}:${b}`);
    const { recovered } = await storeOf(raw, q.name).recover(RECOVER);
    expect(recovered).toEqual([a]);
    expect(await leases(q, raw)).toEqual([]);
    expect((await q.getJob(a))!.state).toBe('stuck');
    expect((await q.getJob(b))!.state).toBe('success');
  });
});

/** Shared parts of the single-system cost probes (job-cost, script-cost, periodic-cost, instructions). */
import { Redis } from 'ioredis';
import { cpuUsOf, parseInfo } from '../../src/bench/measure.js';
import { RedisServer } from '../../src/dev/redis-server.js';
import { WORKER_OPTIONS } from '../../src/executor/options.js';
import type { Queue } from '../../src/index.js';
import { historyFields } from '../../src/redis/history.js';
import { addRun, type FinishSettings, type QueueStore, type Taken } from '../../src/redis/queue-store.js';
import type { StringValue } from '../../src/redis/string-array.js';
import { OUTCOME, type OutcomeCode, UNSTARTED_PREFIX } from '../../src/redis/wire.js';

/** A numeric `--name value` command-line option. */
export function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

/** A flushed Redis to probe: REDIS_URL, or a private redis-server started here. */
export async function labRedis(): Promise<{ url: string; admin: Redis; close(): Promise<void> }> {
  const server = process.env.REDIS_URL ? null : await RedisServer.start();
  const url = process.env.REDIS_URL ?? server!.url;
  const admin = new Redis(url);
  await admin.flushall();
  return {
    url,
    admin,
    async close() {
      admin.disconnect();
      await server?.destroy();
    },
  };
}

/** CPU time the server has used so far (used_cpu_sys + used_cpu_user of INFO cpu), in µs. */
export async function serverCpuUs(admin: Redis): Promise<number> {
  return cpuUsOf(parseInfo(await admin.info('cpu')));
}

/** Script calls (EVALSHA, EVAL, FCALL) so far, and the microseconds Redis has spent in them (INFO commandstats). */
export async function scriptStats(admin: Redis): Promise<{ calls: number; usec: number }> {
  const stats = await admin.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of stats.matchAll(/^cmdstat_(evalsha|eval|fcall):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  return { calls, usec };
}

/** Microseconds Redis has spent in scripts so far (INFO commandstats). */
export async function scriptUsec(admin: Redis): Promise<number> {
  return (await scriptStats(admin)).usec;
}

/** A job's args in the probes: the harness's 100-byte payload. */
export const PROBE_ARGS = 'x'.repeat(100);

/** Submits `jobs` no-op jobs spread round-robin over `groups` groups, `batch` per submitBulk. */
export async function submitSpread(q: Queue, jobs: number, groups: number, batch = 1000): Promise<void> {
  for (let i = 0; i < jobs; i += batch) {
    await q.submitBulk(
      Array.from({ length: Math.min(batch, jobs - i) }, (_, k) => ({
        task: 'noop',
        group: `g${(i + k) % groups}`,
        args: PROBE_ARGS,
      })),
    );
  }
}

/** What the probes' takes and finishes ask for: executor 'w1', scheme (2, 1), 60 s leases. */
const PROBE_SETTINGS: FinishSettings = { workerId: 'w1', countingScheme: [2, 1], leaseMs: 60_000, retryDelay: 1000 };

/** Takes `jobs` jobs for executor 'w1' through the take script, `batch` per call: [id, lease token] each. */
export async function takeAll(store: QueueStore, jobs: number, batch: number): Promise<Array<[string, string]>> {
  const taken: Array<[string, string]> = [];
  while (taken.length < jobs) {
    const { jobs: got } = await store.take(batch, PROBE_SETTINGS);
    if (got.length === 0) throw new Error('take found nothing');
    for (const j of got) taken.push([j.id, String(j.takeSeq)]);
  }
  return taken;
}

/**
 * Ends the taken runs through the finish script with `outcome` ('s', or '+s' with the start folded
 * in), `batch` per call, each call with `history` counts (see src/redis/history.ts) when given.
 */
export async function finishAll(
  store: QueueStore,
  taken: Array<[string, string]>,
  batch: number,
  outcome: string,
  history: (runs: number) => StringValue[] = () => [],
): Promise<void> {
  const unstarted = outcome.startsWith(UNSTARTED_PREFIX);
  const code = (unstarted ? outcome.slice(UNSTARTED_PREFIX.length) : outcome) as OutcomeCode;
  for (let i = 0; i < taken.length; i += batch) {
    const runs: StringValue[] = [];
    const part = taken.slice(i, i + batch);
    for (const [id, seq] of part) addRun(runs, id, seq, code, unstarted, '');
    await store.finish({ ...PROBE_SETTINGS, workerId: '' }, { succeeded: 1000, failed: 1000 }, 0, runs, 0, history(part.length));
  }
}

/**
 * Drains the queue of `store` as one executor of `slots` slots with a no-op handler sends its
 * calls, in fixed sizes instead of the sizes its timing gives: two takes of half the slots, then
 * finish calls of half the slots each (starts folded in, the runs' history counts, the executor's
 * default keep counts) that take as many jobs as they end, until nothing is left. Answers the
 * script calls made. The same calls on every run, however fast the server answers.
 */
export async function drainInBatches(store: QueueStore, slots: number): Promise<number> {
  const half = Math.max(1, Math.floor(slots / 2));
  const keep = {
    succeeded: WORKER_OPTIONS.keepSucceeded.parse(undefined).count,
    failed: WORKER_OPTIONS.keepFailed.parse(undefined).count,
  };
  const held: Array<[string, string]> = [];
  const hold = ({ jobs }: Taken) => {
    for (const j of jobs) held.push([j.id, String(j.takeSeq)]);
  };
  let calls = 0;
  for (let i = 0; i < 2; i++, calls++) hold(await store.take(half, PROBE_SETTINGS));
  while (held.length > 0) {
    const part = held.splice(0, half);
    const runs: StringValue[] = [];
    for (const [id, seq] of part) addRun(runs, id, seq, OUTCOME.success, true, '');
    const history = historyFields(part.map(() => ({ task: 'noop', ms: 0, failed: false })));
    hold(await store.finish(PROBE_SETTINGS, keep, part.length, runs, 0, history));
    calls++;
  }
  return calls;
}

/** Shared parts of the single-system cost probes (job-cost, script-cost, periodic-cost, instructions). */
import { Redis } from 'ioredis';
import { RedisServer } from '../../src/dev/redis-server.js';
import { cpuUsOf, parseInfo } from '../measure.js';
import type { Queue } from '../../src/index.js';
import { takenTokens } from '../../src/queue/job.js';
import type { QueueKeys } from '../../src/redis/keys.js';
import { runScript } from '../../src/redis/scripts.js';
import { packStrings } from '../../src/redis/string-array.js';

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
    await q.submitBulk(Array.from({ length: Math.min(batch, jobs - i) }, (_, k) => ({ task: 'noop', group: `g${(i + k) % groups}`, args: PROBE_ARGS })));
  }
}

/** Takes `jobs` jobs for executor 'w1' through the take script, `batch` per call: [id, lease token] each. */
export async function takeAll(client: Redis, keys: QueueKeys, jobs: number, batch: number): Promise<Array<[string, string]>> {
  const taken: Array<[string, string]> = [];
  while (taken.length < jobs) {
    const [list] = await runScript<[string[], number]>(client, 'take', [keys.rotation], [keys.prefix, 10_000, 'w1', batch, 2, 1, 60_000]);
    if (list.length === 0) throw new Error('take found nothing');
    taken.push(...takenTokens(list));
  }
  return taken;
}

/** Ends the taken runs through the finish script with `outcome` ('s', or '+s' with the start folded in), `batch` per call. */
export async function finishAll(client: Redis, keys: QueueKeys, taken: Array<[string, string]>, batch: number, outcome: string): Promise<void> {
  for (let i = 0; i < taken.length; i += batch) {
    const runs = taken.slice(i, i + batch).flatMap(([id, seq]) => [id, seq, outcome, '']);
    await runScript(client, 'finish', [keys.leases], [keys.prefix, 10_000, 1000, 1000, 1000, 0, '', 2, 1, 60_000, packStrings(runs, Infinity, 'runs')]);
  }
}

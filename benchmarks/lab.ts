/** Shared parts of the single-system cost probes (job-cost, script-cost, periodic-cost). */
import { Redis } from 'ioredis';
import { RedisServer } from '../src/dev/redis-server.js';

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

/** Microseconds Redis has spent in scripts so far (INFO commandstats). */
export async function scriptUsec(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  let us = 0;
  for (const m of stats.matchAll(/^cmdstat_(evalsha|eval|fcall):calls=\d+,usec=(\d+)/gm)) us += Number(m[2]);
  return us;
}

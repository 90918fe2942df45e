/**
 * What loading Rota's function library costs Redis: the library's size, how long FUNCTION LOAD
 * blocks the server (every other client waits meanwhile), and the Lua memory the loaded library
 * holds. For comparing two versions of the builder (src/redis/library.ts) or of the scripts.
 *
 * The load time is Redis's own: each load's duration in SLOWLOG (logging every command), their
 * median and range, and the mean of INFO commandstats; the client's round trip is shown beside
 * it. The memory is INFO memory's `used_memory_vm_functions` (the functions' Lua VM) and
 * `used_memory_functions` (Redis's records of them), on a fresh server before and after one load,
 * with Lua's garbage collected (a no-op script call makes the VM collect a full cycle).
 *
 * Usage: npx tsx benchmarks/probes/library-load.ts [--loads 20]
 *   (REDIS_URL: a server to use instead of a private one; its functions are flushed)
 */

import { Redis } from 'ioredis';
import { parseInfo } from '../../src/bench/measure.js';
import { RedisServer } from '../../src/dev/redis-server.js';
import { rotaLibrary } from '../../src/redis/library.js';
import { arg } from './lab.js';

const loads = arg('loads', 20);
const lib = rotaLibrary();
const server = process.env.REDIS_URL ? null : await RedisServer.start();
const admin = new Redis(process.env.REDIS_URL ?? server!.url);

/** The functions' memory (bytes) once Lua has collected its garbage. */
async function functionsMemory(): Promise<{ vm: number; functions: number }> {
  // (a full collection of the functions' VM: Redis runs one when a script asks for it; a
  // throwaway library's one call does, and the library is deleted after)
  await admin.call(
    'FUNCTION',
    'LOAD',
    'REPLACE',
    "#!lua name=probe_gc\nredis.register_function('probe_gc', function() collectgarbage('collect') return 1 end)",
  );
  await admin.call('FCALL', 'probe_gc', 0);
  await admin.call('FUNCTION', 'DELETE', 'probe_gc');
  const info = parseInfo(await admin.info('memory'));
  return { vm: Number(info.used_memory_vm_functions), functions: Number(info.used_memory_functions) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;

const version = parseInfo(await admin.info('server')).redis_version;
await admin.call('FUNCTION', 'FLUSH', 'SYNC');
const empty = await functionsMemory();
await admin.call('FUNCTION', 'LOAD', lib.code);
const loaded = await functionsMemory();

// Every command in the slow log, which records each one's duration as Redis measures it.
const slowlog = (await admin.config('GET', 'slowlog-log-slower-than')) as string[];
const slowlogLen = (await admin.config('GET', 'slowlog-max-len')) as string[];
await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.config('SET', 'slowlog-max-len', String(4 * loads + 128));
await admin.call('SLOWLOG', 'RESET');
await admin.config('RESETSTAT');
const roundTrips: number[] = [];
for (let i = 0; i < loads; i++) {
  const t0 = performance.now();
  await admin.call('FUNCTION', 'LOAD', 'REPLACE', lib.code);
  roundTrips.push((performance.now() - t0) * 1000);
}
const entries = (await admin.call('SLOWLOG', 'GET', String(4 * loads + 128))) as Array<[number, number, number, string[]]>;
const durations = entries
  .filter(([, , , args]) => String(args[0]).toUpperCase() === 'FUNCTION' && String(args[1]).toUpperCase() === 'LOAD')
  .map(([, , us]) => Number(us));
const stats = /^cmdstat_function\|load:calls=(\d+),usec=(\d+)/m.exec(await admin.info('commandstats'));
await admin.config('SET', 'slowlog-log-slower-than', slowlog[1]);
await admin.config('SET', 'slowlog-max-len', slowlogLen[1]);

const ms = (us: number) => `${(us / 1000).toFixed(2)} ms`;
console.log(`Redis ${version}; library ${lib.name}: ${kb(Buffer.byteLength(lib.code))} (${Buffer.byteLength(lib.code)} bytes)`);
console.log(
  `FUNCTION LOAD REPLACE x${durations.length} (SLOWLOG): median ${ms(median(durations))}, min ${ms(Math.min(...durations))}, max ${ms(Math.max(...durations))}`,
);
if (stats) console.log(`  INFO commandstats: ${stats[1]} loads, mean ${ms(Number(stats[2]) / Number(stats[1]))}`);
console.log(`  client round trip: median ${ms(median(roundTrips))}`);
console.log(
  `Lua memory of the library (used_memory_vm_functions): ${kb(loaded.vm - empty.vm)} (${kb(empty.vm)} empty, ${kb(loaded.vm)} loaded); used_memory_functions ${kb(loaded.functions - empty.functions)}`,
);

await admin.call('FUNCTION', 'DELETE', lib.name).catch(() => undefined);
admin.disconnect();
await server?.destroy();

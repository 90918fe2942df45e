/**
 * A private redis-server run under valgrind's callgrind, for probes that count the instructions
 * Redis executes: the same count on every run and machine load, where CPU time on a shared
 * 2-core machine moves by a factor of two from one minute to the next. With the cache simulated,
 * also the data reads and writes that miss the first-level and the last-level cache: a change of
 * how data is laid out (a hash as one flat list instead of a table) can cost instructions and
 * still save time, through the misses it spares.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../src/dev/redis-server.js';

export interface CallgrindServer {
  url: string;
  /** A client of the server (closed by stop). */
  client: Redis;
  /** Dumps (and zeroes) the counters under `phase`. */
  dump(phase: string): void;
  /** Instructions of the dump named `phase`. */
  counted(phase: string): number;
  /** Every event counted in the dump named `phase` (Ir, and with the cache simulated D1mr, DLmw...). */
  events(phase: string): Record<string, number>;
  /** Stops the server; keeps its dumps (and answers where) when `keep`. */
  stop(keep: boolean): Promise<string | undefined>;
}

/** How a {@link startCallgrindServer} server counts. */
export interface CallgrindOptions {
  /** Simulate the caches too (several times slower). */
  cacheSim?: boolean;
  /**
   * Count only while a script runs (inside FCALL), on a server whose timers change nothing the
   * scripts meet: the count then does not move with machine load (see {@link SCRIPTS_ONLY}).
   */
  scriptsOnly?: boolean;
}

/**
 * What a scripts-only count needs. Callgrind collects only inside `fcallCommand` (exported by
 * Redis's own binary, so found without debug symbols): not the reading and parsing of requests,
 * the writing of replies or the timers, whose work depends on how the client's requests arrive
 * and how long the run takes. The server's settings keep the timers from changing what a script
 * finds (tables rehashed in the background, expired keys deleted) and a slow run from changing
 * what a script does (a slow-log entry; other clients served from inside a script after
 * `busy-reply-threshold`).
 */
export const SCRIPTS_ONLY = {
  valgrind: ['--collect-atstart=no', '--toggle-collect=fcallCommand'],
  server: [
    ['hz', '1'],
    ['dynamic-hz', 'no'],
    ['activerehashing', 'no'],
    ['slowlog-log-slower-than', '-1'],
    ['busy-reply-threshold', '3600000'],
  ],
} as const;

/**
 * `command` with `args` run where /dev/urandom reads a fixed seed (a mount namespace of its own,
 * which needs root; without it, as it is): Redis seeds its hash tables' hash from it at start,
 * and a random seed moves every lookup's walk along a bucket's chain, the commands' table's
 * included (some 0.5–1 % of a script's instructions from one run to the next).
 */
function withFixedSeed(dir: string, command: string, args: readonly string[]): readonly [string, readonly string[]] {
  const seed = join(dir, 'seed');
  writeFileSync(seed, Buffer.alloc(64, 7));
  const mounted = ['--mount', 'sh', '-c', 'mount --bind "$0" /dev/urandom && exec "$@"', seed];
  try {
    execFileSync('unshare', [...mounted, 'true'], { stdio: 'ignore' });
  } catch {
    return [command, args];
  }
  return ['unshare', [...mounted, command, ...args]];
}

/**
 * Starts `server` (a redis-server binary; one built with symbols lets callgrind_annotate name
 * functions) under callgrind, counting as `opts` says (a boolean: `cacheSim`).
 */
export async function startCallgrindServer(server: string, opts: boolean | CallgrindOptions = {}): Promise<CallgrindServer> {
  const { cacheSim = false, scriptsOnly = false } = typeof opts === 'boolean' ? { cacheSim: opts } : opts;
  const dir = mkdtempSync(join(tmpdir(), 'rota-callgrind-'));
  const port = await freePort();
  const settings: string[] = ['--port', String(port), '--save', '', '--appendonly', 'no'];
  if (scriptsOnly) for (const [name, value] of SCRIPTS_ONLY.server) settings.push(`--${name}`, value);
  // Names uncompressed: each dump (one per phase) then names its functions on its own.
  const valgrind = [
    'valgrind',
    [
      '--tool=callgrind',
      '--compress-strings=no',
      `--cache-sim=${cacheSim ? 'yes' : 'no'}`,
      ...(scriptsOnly ? SCRIPTS_ONLY.valgrind : []),
      `--callgrind-out-file=${join(dir, 'cg.out')}`,
      server,
      ...settings,
    ],
  ] as const;
  const [command, args] = scriptsOnly ? withFixedSeed(dir, ...valgrind) : valgrind;
  const proc = spawn(command, args, { stdio: 'ignore' });
  // The server goes with this process, whatever ends it.
  process.once('exit', () => proc.kill('SIGKILL'));
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, retryStrategy: () => 100 });
  client.on('error', () => {}); // refused while valgrind starts the server
  for (let i = 0; ; i++) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch {
      if (i > 300) throw new Error(`redis-server under valgrind did not start on port ${port}`);
      client.disconnect();
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const events = (phase: string): Record<string, number> => {
    for (const f of readdirSync(dir)) {
      const text = readFileSync(join(dir, f), 'utf8');
      if (!text.includes(`\ndesc: Trigger: dump ${phase}\n`)) continue;
      const names = /^events: (.+)$/m.exec(text);
      const totals = /^(?:summary|totals): (.+)$/m.exec(text);
      if (!names || !totals) continue;
      const values = totals[1].trim().split(/\s+/).map(Number);
      return Object.fromEntries(
        names[1]
          .trim()
          .split(/\s+/)
          .map((name, i) => [name, values[i] ?? 0]),
      );
    }
    throw new Error(`no callgrind dump for ${phase} in ${dir}`);
  };
  return {
    url,
    client,
    dump: (phase) => execFileSync('callgrind_control', ['-d', phase, String(proc.pid)], { stdio: 'ignore' }),
    counted: (phase) => events(phase).Ir,
    events,
    async stop(keep) {
      await client.quit();
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      if (keep) return dir;
      rmSync(dir, { recursive: true, force: true });
      return undefined;
    },
  };
}

/**
 * What the dashboard's Redis page reads of the server: the fields of INFO it shows (memory,
 * clients, ops/s, persistence, replication), the slowlog's newest entries (SLOWLOG GET, bounded)
 * and Rota's function libraries loaded (FUNCTION LIST, without their code). Nothing secret is
 * read or answered: no CONFIG GET, no CLIENT LIST, no path of the server's files; a slow
 * command's arguments are cut short, and left out for commands that may carry a password.
 */
import type { Cluster, Redis } from 'ioredis';
import { parseInfo } from './info.js';
import { rotaLibrary } from './library.js';

/** The INFO fields the page shows, by section; any other field (paths, the run id) is never answered. */
const INFO_FIELDS = {
  server: ['redis_version', 'redis_mode', 'uptime_in_seconds'],
  memory: ['used_memory', 'used_memory_peak', 'used_memory_rss', 'maxmemory', 'maxmemory_policy', 'mem_fragmentation_ratio'],
  clients: ['connected_clients', 'blocked_clients', 'maxclients'],
  stats: ['instantaneous_ops_per_sec', 'total_commands_processed', 'evicted_keys', 'rejected_connections'],
  persistence: [
    'loading',
    'rdb_changes_since_last_save',
    'rdb_bgsave_in_progress',
    'rdb_last_save_time',
    'rdb_last_bgsave_status',
    'aof_enabled',
    'aof_rewrite_in_progress',
    'aof_last_bgrewrite_status',
    'aof_last_write_status',
  ],
  replication: ['role', 'connected_slaves', 'master_link_status', 'master_last_io_seconds_ago', 'master_sync_in_progress'],
} as const;

/** Commands whose arguments may hold a password or another secret: a slow entry shows their name alone. */
const SECRET_ARGS = new Set([
  'auth',
  'hello',
  'config',
  'acl',
  'migrate',
  'client',
  'module',
  'debug',
  // (scripts and functions: their arguments are job args, and a script's body may hold anything)
  'eval',
  'eval_ro',
  'evalsha',
  'evalsha_ro',
  'fcall',
  'fcall_ro',
  'script',
  'function',
]);
/** Arguments shown of a slow command, and characters of each. */
const SLOW_ARGS = 4;
const SLOW_ARG_CHARS = 60;

/** One slowlog entry, its arguments cut short. */
export interface SlowEntry {
  id: number;
  /** When it ran (ms). */
  at: number;
  /** How long it took (µs). */
  micros: number;
  /** The command and its first arguments (none for commands that may carry a secret). */
  command: string[];
  /** Arguments left out. */
  more: number;
}

/** A replica as its primary lists it. */
export interface ReplicaInfo {
  state: string;
  /** Seconds since its last acknowledgement. */
  lag: number | undefined;
  /** Bytes of the primary's replication offset it has not acknowledged. */
  behind: number | undefined;
}

/** A Rota function library loaded in the server. */
export interface LibraryInfo {
  name: string;
  functions: number;
  /** The schema version it answers (undefined when it could not be asked). */
  schema?: number;
}

/** Libraries whose schema version is asked at most (an old library stays loaded after each upgrade). */
const MOST_LIBRARIES = 10;

/** The server's state, as the Redis page shows it. */
export interface ServerReport {
  /** INFO fields read (only those of INFO_FIELDS), by name. */
  info: Record<string, string>;
  /** Replicas of a primary. */
  replicas: ReplicaInfo[];
  /** The newest slowlog entries; undefined when this user may not read them (its error's first line). */
  slowlog: SlowEntry[] | string;
  /**
   * Rota's libraries loaded (name, function count, and the schema version it reads and writes,
   * from its `version` function); a string when this user may not list them.
   */
  libraries: LibraryInfo[] | string;
  /** The name of the library this process's code calls. */
  expectedLibrary: string;
}

/** The first line of an error's message (a refused command's reason). */
function reason(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 200);
}

/** The fields of INFO's text that INFO_FIELDS names (no other is kept), and the replicas it lists. */
export function serverInfo(text: string): { info: Record<string, string>; replicas: ReplicaInfo[] } {
  const all = parseInfo(text);
  const info: Record<string, string> = {};
  for (const key of Object.values(INFO_FIELDS).flat()) if (all[key] !== undefined) info[key] = all[key];
  const offset = all.master_repl_offset === undefined ? undefined : Number(all.master_repl_offset);
  const replicas: ReplicaInfo[] = [];
  for (const [key, value] of Object.entries(all)) {
    if (!/^slave\d+$/.test(key)) continue;
    const r = Object.fromEntries(value.split(',').map((kv) => kv.split('=', 2) as [string, string]));
    const lag = r.lag === undefined ? undefined : Number(r.lag);
    const behind = offset !== undefined && r.offset !== undefined ? Math.max(0, offset - Number(r.offset)) : undefined;
    replicas.push({ state: String(r.state ?? ''), lag, behind });
  }
  return { info, replicas };
}

/** A slowlog reply's entries, their arguments cut short and secrets left out. */
export function parseSlowlog(reply: unknown[]): SlowEntry[] {
  return reply.map((e) => {
    const [id, at, micros, args] = e as [number, number, number, Array<string | Buffer>];
    const all = (args ?? []).map((a) => String(a));
    const name = all[0] ?? '';
    const secret = SECRET_ARGS.has(name.toLowerCase());
    const shown = secret
      ? [name]
      : all.slice(0, SLOW_ARGS + 1).map((a) => (a.length > SLOW_ARG_CHARS ? `${a.slice(0, SLOW_ARG_CHARS)}…` : a));
    return { id: Number(id), at: Number(at) * 1000, micros: Number(micros), command: shown, more: all.length - shown.length };
  });
}

/**
 * The server's report (of one node: a Cluster client answers for the node it picks). Reads INFO
 * (six sections, one command), SLOWLOG GET `slowEntries` (at most 50) and FUNCTION LIST of Rota's libraries.
 */
export async function serverReport(client: Redis | Cluster, slowEntries = 10): Promise<ServerReport> {
  const sections = Object.keys(INFO_FIELDS);
  const [infoText, slow, libs] = await Promise.all([
    // (one INFO of several sections: Redis 7, as Rota's functions need)
    client.call('INFO', ...sections) as Promise<string>,
    client.slowlog('GET', Math.min(50, Math.max(1, slowEntries))).then(
      (r) => parseSlowlog(r as unknown[]),
      (err: unknown) => `not readable: ${reason(err)}`,
    ),
    (client.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'rota_*') as Promise<unknown[]>).then(
      (r) => withSchemas(client, parseLibraries(r)),
      (err: unknown) => `not readable: ${reason(err)}`,
    ),
  ]);
  const { info, replicas } = serverInfo(infoText);
  return { info, replicas, slowlog: slow, libraries: libs, expectedLibrary: rotaLibrary().name };
}

/** Each library's schema version, from its `version` function (the first MOST_LIBRARIES libraries). */
async function withSchemas(client: Redis | Cluster, libs: LibraryInfo[]): Promise<LibraryInfo[]> {
  await Promise.all(
    libs.slice(0, MOST_LIBRARIES).map(async (lib) => {
      try {
        lib.schema = Number(await client.call('FCALL', `${lib.name}_version`, '0'));
      } catch {
        // an older library without the function, or a user without the right: no version shown
      }
    }),
  );
  return libs;
}

/** FUNCTION LIST's reply (RESP2: flat key, value lists): each library's name and function count. */
function parseLibraries(reply: unknown[]): LibraryInfo[] {
  const out: LibraryInfo[] = [];
  for (const lib of reply) {
    const fields = lib as unknown[];
    let name = '';
    let functions = 0;
    for (let i = 0; i + 1 < fields.length; i += 2) {
      if (String(fields[i]) === 'library_name') name = String(fields[i + 1]);
      if (String(fields[i]) === 'functions') functions = (fields[i + 1] as unknown[]).length;
    }
    if (name.startsWith('rota_')) out.push({ name, functions });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

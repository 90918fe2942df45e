/**
 * Rota's Lua scripts, loaded into Redis as one function library (Redis 7+ `FUNCTION LOAD`) and
 * run with `FCALL`. Each file in `lua/` is one atomic operation; the `--- @include "name"` lines
 * name the helpers in `lua/includes/` it uses. The library holds every helper once and each
 * script as a function: the helpers are defined when the library loads, not on every call (as
 * they would be with EVAL, where defining them costs a call about as much as ten Redis commands).
 *
 * The library's name carries a hash of its text, so that executors of two Rota versions can run
 * side by side on one Redis (a rolling upgrade): each calls its own functions.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';

export type ScriptName = 'submit' | 'take' | 'start' | 'finish' | 'heartbeat' | 'recover' | 'cancel' | 'group' | string;

/** The function library: its code for FUNCTION LOAD, and the function name of each script. */
export interface Library {
  name: string;
  code: string;
  functions: Map<string, string>;
}

function luaDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'submit.lua'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error('cannot find the lua/ folder of the rota package');
}

const INCLUDE = /^--- @include "([^"]+)"\s*$/gm;

/**
 * Builds the library from the scripts in `dir`: the includes they name, each once (`common`
 * first; an include may use what comes before it), then each script's body as the function
 * `rota_<hash>_<script>`. Every call begins with `beginCall()` (includes/common), which empties
 * what the last call collected.
 */
export function buildLibrary(dir: string): Library {
  const files = readdirSync(dir).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)).sort();
  const includes: string[] = ['includes/common'];
  const bodies: Array<[string, string]> = [];
  for (const script of files) {
    const text = readFileSync(join(dir, `${script}.lua`), 'utf8');
    for (const m of text.matchAll(INCLUDE)) if (!includes.includes(m[1])) includes.push(m[1]);
    bodies.push([script, text.replace(INCLUDE, '')]);
  }
  const helpers = includes.map((inc) => readFileSync(join(dir, `${inc}.lua`), 'utf8')).join('\n');
  const hash = createHash('sha1').update(helpers);
  for (const [, body] of bodies) hash.update(body);
  const name = `rota_${hash.digest('hex').slice(0, 12)}`;
  const functions = new Map<string, string>();
  const registered = bodies.map(([script, body]) => {
    const fn = `${name}_${script.replace(/-/g, '_')}`;
    functions.set(script, fn);
    return `redis.register_function('${fn}', function(KEYS, ARGV)\nbeginCall()\n${body}\nend)\n`;
  });
  return { name, code: `#!lua name=${name}\n${helpers}\n${registered.join('\n')}`, functions };
}

let library: Library | undefined;

function lib(): Library {
  library ??= buildLibrary(luaDir());
  return library;
}

/** The server could not load the library (Rota needs Redis 7.0 or newer). */
export class ScriptLoadError extends Error {
  constructor(cause: Error) {
    super(`cannot load Rota's function library into Redis (it needs Redis 7.0 or newer): ${cause.message}`);
    this.name = 'ScriptLoadError';
  }
}

/** Loads the library into one server unless it has it (another client may have loaded it first). */
async function loadInto(server: Redis): Promise<void> {
  try {
    await server.call('FUNCTION', 'LOAD', lib().code);
  } catch (err) {
    if (err instanceof Error && /already exists/.test(err.message)) return;
    throw new ScriptLoadError(err as Error);
  }
}

/** Loads the library where `client` runs scripts: its server, or every primary of a cluster. */
async function load(client: Redis): Promise<void> {
  const cluster = client as unknown as Cluster;
  if (typeof cluster.nodes === 'function') {
    await Promise.all(cluster.nodes('master').map(loadInto));
  } else {
    await loadInto(client);
  }
}

type Arg = string | number | Buffer;

/**
 * Runs a script; replies come back as Buffers when `buffers` is set (binary-safe), else strings.
 * A server without the library (new, or restarted without persistence) gets it loaded first.
 */
export async function runScript<T = unknown>(
  client: Redis,
  name: ScriptName,
  keys: string[],
  args: Arg[],
  buffers = false,
): Promise<T> {
  const fn = lib().functions.get(name);
  if (!fn) throw new Error(`no script named ${name}`);
  const call = () => client[buffers ? 'callBuffer' : 'call']('FCALL', fn, keys.length, ...keys, ...args) as Promise<T>;
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof Error) || !/Function not found/i.test(err.message)) throw err;
    await load(client);
    return call();
  }
}

/** Loads the library ahead of use, so that the first calls do not wait for it. */
export async function preload(client: Redis): Promise<void> {
  await load(client);
}

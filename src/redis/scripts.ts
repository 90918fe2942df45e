/**
 * Rota's Lua scripts, loaded into Redis as one function library (Redis 7+ `FUNCTION LOAD`) and
 * run with `FCALL`. Each file in `lua/` is one atomic operation; the `--- @include "name"` lines
 * name the helpers in `lua/includes/` it uses (and those of an include, the helpers it uses). The library holds every helper once and each
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

/** The files of the library: each include and each script, as [name, text]. */
export interface LibraryParts {
  /** Each include once, after the includes it names (`includes/common` first). */
  includes: Array<[string, string]>;
  /** Each script of `lua/`, by file name. */
  scripts: Array<[string, string]>;
}

/**
 * The scripts in `dir` and the includes they use. An include names the includes it uses itself
 * with `--- @include` lines, as a script does: each include comes after the includes it names
 * (depth first, in the order they are named), so that a file may use what those define.
 */
export function libraryParts(dir: string): LibraryParts {
  const names = readdirSync(dir).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)).sort();
  const scripts = names.map((script): [string, string] => [script, readFileSync(join(dir, `${script}.lua`), 'utf8')]);
  const includes: Array<[string, string]> = [];
  const placed = new Map<string, boolean>(); // name -> true once placed, false while its own are placed
  const place = (name: string, by: string): void => {
    const state = placed.get(name);
    if (state) return;
    if (state === false) throw new Error(`lua includes name each other in a cycle: ${by} and ${name}`);
    const file = join(dir, `${name}.lua`);
    if (!existsSync(file)) throw new Error(`${by} includes "${name}", which is not in ${dir}`);
    placed.set(name, false);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(INCLUDE)) place(m[1], name);
    placed.set(name, true);
    includes.push([name, text]);
  };
  place('includes/common', 'every script');
  for (const [script, text] of scripts) for (const m of text.matchAll(INCLUDE)) place(m[1], script);
  return { includes, scripts };
}

/**
 * Builds the library from the scripts in `dir`: the includes they use (see libraryParts), then
 * each script's body as the function `rota_<hash>_<script>`. Every call begins with
 * `beginCall()` (includes/common), which empties what the last call collected.
 */
export function buildLibrary(dir: string): Library {
  const parts = libraryParts(dir);
  const bodies = parts.scripts.map(([script, text]): [string, string] => [script, text.replace(INCLUDE, '')]);
  const helpers = parts.includes.map(([, text]) => text).join('\n');
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

/**
 * Rota's Lua scripts, loaded into Redis as one function library (Redis 7+ `FUNCTION LOAD`) and
 * run with `FCALL`. Each file in `lua/` is one atomic operation; the `--- @include "includes/<name>"`
 * lines of a script or an include name the helpers in `lua/includes/` it uses. The library holds
 * every helper once and each script as a function: the helpers are defined when the library
 * loads, not on every call (as they would be with EVAL, where defining them costs a call about as
 * much as ten Redis commands).
 *
 * The library's name carries a hash of its text, so that executors of two Rota versions can run
 * side by side on one Redis (a rolling upgrade): each calls its own functions.
 *
 * Only the stores (./queue-store.ts, ./periodic-store.ts) call the scripts, through
 * {@link runFunction}: they hold every script's arguments and reply format.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';
import { RotaError } from '../errors.js';
import { wireInclude } from './wire.js';

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
/** A script's function flags (`--- @flags no-writes`): Redis runs a `no-writes` function while it refuses writes. */
const FLAGS = /^--- @flags ([a-z-]+(?: [a-z-]+)*)\s*$/m;

/** The include generated from src/redis/wire.ts, emitted before every other include. */
export const WIRE_INCLUDE = 'includes/wire';

/** The includes a Lua text declares, in the order it declares them. */
function declaredIncludes(text: string): string[] {
  return [...text.matchAll(INCLUDE)].map((m) => m[1]);
}

/** The includes of `dir` that hold a top-level block (a line `do`), by name. */
function blockIncludes(dir: string): string[] {
  const folder = join(dir, 'includes');
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((f) => f.endsWith('.lua') && /^do$/m.test(readFileSync(join(folder, f), 'utf8')))
    .map((f) => `includes/${f.slice(0, -4)}`)
    .sort();
}

/**
 * The includes the scripts need, each after the includes it declares (a depth-first walk from
 * the scripts' declarations in file order, `includes/common` first, then those that hold a
 * top-level block): the order they are defined in the library. Throws on an include that does not exist or that depends on itself.
 */
export function orderIncludes(dir: string, scripts: Array<[string, string]>): string[] {
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (inc: string, from: string, path: string[]) => {
    if (inc === WIRE_INCLUDE || state.get(inc) === 'done') return;
    if (state.get(inc) === 'visiting')
      throw new Error(`Lua includes depend on each other in a cycle: ${[...path, inc].join(' -> ')}`);
    const file = join(dir, `${inc}.lua`);
    if (!existsSync(file)) throw new Error(`${from} includes "${inc}", but there is no ${inc}.lua in ${dir}`);
    state.set(inc, 'visiting');
    for (const dep of declaredIncludes(readFileSync(file, 'utf8'))) visit(dep, `${inc}.lua`, [...path, inc]);
    state.set(inc, 'done');
    order.push(inc);
  };
  visit('includes/common', 'the library', []);
  // An include whose locals are kept in a block of its own (`do ... end` at the top level) comes
  // as early as its dependencies allow: while the block is read, the library's locals declared so
  // far count too, and Lua allows 200 active locals in the library's main chunk.
  for (const inc of blockIncludes(dir)) visit(inc, 'the library', []);
  for (const [script, text] of scripts) for (const inc of declaredIncludes(text)) visit(inc, `${script}.lua`, []);
  return order;
}

/** The library's parts from `dir`, each as [name, text]: the includes in library order, the
 * generated `includes/wire` first (see {@link orderIncludes}), and the scripts by name. */
export function libraryParts(dir: string): { includes: Array<[string, string]>; scripts: Array<[string, string]> } {
  if (existsSync(join(dir, `${WIRE_INCLUDE}.lua`))) {
    throw new Error(`${WIRE_INCLUDE} is generated from src/redis/wire.ts: remove ${WIRE_INCLUDE}.lua from ${dir}`);
  }
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.lua'))
    .map((f) => f.slice(0, -4))
    .sort();
  const scripts = files.map((script): [string, string] => [script, readFileSync(join(dir, `${script}.lua`), 'utf8')]);
  const includes = orderIncludes(dir, scripts).map((inc): [string, string] => [
    inc,
    readFileSync(join(dir, `${inc}.lua`), 'utf8'),
  ]);
  return { includes: [[WIRE_INCLUDE, wireInclude()], ...includes], scripts };
}

/**
 * Builds the library from the scripts in `dir`: its parts ({@link libraryParts}) without their
 * `--- @include` lines, each script's body as the function `rota_<hash>_<script>`. Every call
 * begins with `beginCall()` (includes/common), which empties what the last call collected.
 */
export function buildLibrary(dir: string): Library {
  const { includes, scripts } = libraryParts(dir);
  const helpers = includes.map(([, text]) => text.replace(INCLUDE, '')).join('\n');
  const bodies = scripts.map(([script, text]): [string, string] => [script, text.replace(INCLUDE, '')]);
  const texts = new Map(scripts);
  const hash = createHash('sha1').update(helpers);
  for (const [, body] of bodies) hash.update(body);
  const name = `rota_${hash.digest('hex').slice(0, 12)}`;
  const functions = new Map<string, string>();
  const registered = bodies.map(([script, body]) => {
    const fn = `${name}_${script.replace(/-/g, '_')}`;
    functions.set(script, fn);
    const flags = FLAGS.exec(texts.get(script) ?? '')?.[1].split(' ') ?? [];
    const callback = `function(KEYS, ARGV)\nbeginCall()\n${body}\nend`;
    if (flags.length === 0) return `redis.register_function('${fn}', ${callback})\n`;
    const list = flags.map((f) => `'${f}'`).join(', ');
    return `redis.register_function{function_name='${fn}', callback=${callback}, flags={${list}}}\n`;
  });
  return { name, code: `#!lua name=${name}\n${helpers}\n${registered.join('\n')}`, functions };
}

let library: Library | undefined;

/** Rota's library, built from its `lua/` folder on first use. */
export function rotaLibrary(): Library {
  library ??= buildLibrary(luaDir());
  return library;
}

/**
 * The server could not load the library: it is not Redis 7.0 or newer, or the user may not run
 * `FUNCTION LOAD` and nobody loaded the library for it yet.
 */
export class ScriptLoadError extends RotaError {}

/** Whether `server` has `lib` loaded: its `version` function answers. */
async function isLoaded(server: Redis, lib: Library): Promise<boolean> {
  try {
    await server.call('FCALL', lib.functions.get('version')!, '0');
    return true;
  } catch {
    return false;
  }
}

/**
 * Loads the library into one server unless it has it (another client, or an administrator, may
 * have loaded it first).
 */
async function loadInto(server: Redis, lib: Library): Promise<void> {
  if (await isLoaded(server, lib)) return;
  try {
    await server.call('FUNCTION', 'LOAD', lib.code);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/already exists/.test(message)) return;
    if (/^NOPERM/.test(message)) {
      throw new ScriptLoadError(
        `Rota's function library is not loaded, and this user may not load it: FUNCTION LOAD was refused (${message}). ` +
          'Load it once with a user allowed FUNCTION LOAD (see docs/operations.md), or grant +function|load.',
      );
    }
    throw new ScriptLoadError(`cannot load Rota's function library into Redis (it needs Redis 7.0 or newer): ${message}`);
  }
}

/** Loads the library where `client` runs scripts: its server, or every primary of a cluster. */
export async function loadLibrary(client: Redis, lib: Library = rotaLibrary()): Promise<void> {
  const cluster = client as unknown as Cluster;
  if (typeof cluster.nodes === 'function') {
    await Promise.all(cluster.nodes('master').map((node) => loadInto(node, lib)));
  } else {
    await loadInto(client, lib);
  }
}

/** An argument of a script call. */
export type Arg = string | number | Buffer;

/**
 * Runs script `script` of `lib`; replies come back as Buffers when `buffers` is set
 * (binary-safe), else strings. A server without the library (new, or restarted without
 * persistence) gets it loaded first. For the stores only: everything else calls them.
 */
export async function runFunction<T>(
  client: Redis,
  lib: Library,
  script: string,
  keys: string[],
  args: Arg[],
  buffers = false,
): Promise<T> {
  const fn = lib.functions.get(script);
  if (!fn) throw new Error(`no script named ${script}`);
  const call = () => client[buffers ? 'callBuffer' : 'call']('FCALL', fn, keys.length, ...keys, ...args) as Promise<T>;
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof Error) || !/Function not found/i.test(err.message)) throw err;
    await loadLibrary(client, lib);
    return call();
  }
}

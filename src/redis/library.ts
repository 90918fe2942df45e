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
import { LibraryMismatchError, RotaError } from '../errors.js';
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

/**
 * The includes the scripts need, each after the includes it declares (a depth-first walk from
 * the scripts' declarations in file order, `includes/common` first): the order they are
 * defined in a script's block of the library. Throws on an include that does not exist or that
 * depends on itself.
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
 * Builds the library from the scripts in `dir` ({@link libraryParts}), without their
 * `--- @include` lines: the generated `includes/wire` (constants only) first, then per script a
 * `do ... end` block holding the includes it needs (see {@link orderIncludes}) and its body as
 * the function `rota_<hash>_<script>`. A script sees only what it declares, as luacheck checks
 * it, and no scope holds more locals than one script's includes (Lua allows 200 per function).
 * Every call begins with `beginCall()` (includes/common), which empties what the last call of
 * that script collected.
 */
export function buildLibrary(dir: string): Library {
  const { includes, scripts } = libraryParts(dir);
  const texts = new Map(includes.map(([inc, text]) => [inc, text.replace(INCLUDE, '')]));
  const wire = texts.get(WIRE_INCLUDE)!;
  const hash = createHash('sha1');
  for (const [, text] of includes) hash.update(text);
  for (const [, text] of scripts) hash.update(text);
  const name = `rota_${hash.digest('hex').slice(0, 12)}`;
  const functions = new Map<string, string>();
  const blocks = scripts.map(([script, text]) => {
    const fn = `${name}_${script.replace(/-/g, '_')}`;
    functions.set(script, fn);
    const helpers = orderIncludes(dir, [[script, text]]).map((inc) => texts.get(inc)!);
    const flags = FLAGS.exec(text)?.[1].split(' ') ?? [];
    const callback = `function(KEYS, ARGV)\nbeginCall()\n${text.replace(INCLUDE, '')}\nend`;
    const register =
      flags.length === 0
        ? `redis.register_function('${fn}', ${callback})`
        : `redis.register_function{function_name='${fn}', callback=${callback}, flags={${flags.map((f) => `'${f}'`).join(', ')}}}`;
    return `do -- ${script}\n${helpers.join('\n')}\n${register}\nend\n`;
  });
  return { name, code: `#!lua name=${name}\n${wire}\n${blocks.join('\n')}`, functions };
}

let library: Library | undefined;

/** Rota's library, built from its `lua/` folder on first use. */
export function rotaLibrary(): Library {
  library ??= buildLibrary(luaDir());
  return library;
}

/**
 * The server has not Rota's function library and this client cannot load it: the user may not
 * run `FUNCTION LOAD` (load it with `rota migrate` as the deploy user, docs/operations.md), may
 * not list functions to check it, or the server is older than Redis 7.0.
 */
export class ScriptLoadError extends RotaError {}

/** What a server holds under the library's name: its code, or null when it has none. */
async function loadedCode(server: Redis, lib: Library): Promise<string | null> {
  let reply: unknown;
  try {
    reply = await server.call('FUNCTION', 'LIST', 'LIBRARYNAME', lib.name, 'WITHCODE');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/^NOPERM/.test(message)) {
      throw new ScriptLoadError(
        `this Redis user may not list functions (${message}): Rota checks the loaded library's code before its first call; grant +function|list (docs/operations.md#acl)`,
      );
    }
    throw new ScriptLoadError(`cannot read Rota's function library (it needs Redis 7.0 or newer): ${message}`);
  }
  // (an array of libraries, each a flat array of field, value: library_name, engine, functions, library_code)
  for (const entry of reply as unknown[][]) {
    const fields = new Map<string, unknown>();
    for (let i = 0; i + 1 < entry.length; i += 2) fields.set(String(entry[i]), entry[i + 1]);
    if (fields.get('library_name') === lib.name) return String(fields.get('library_code'));
  }
  return null;
}

/**
 * Makes sure one server holds `lib` as this Rota built it: loads it when it is missing (the user
 * may load functions: the default user, tests, the demo), and refuses with a
 * {@link LibraryMismatchError} when the library under its name holds other code.
 * @param replace a deploy's load ({@link loadLibrary} with `replace`): other code under the
 *   library's name is replaced, not refused. Resolves whether the server's library was changed.
 */
async function ensureOn(server: Redis, lib: Library, replace: boolean): Promise<boolean> {
  const code = await loadedCode(server, lib);
  if (code === lib.code) return false;
  if (code !== null && !replace) throw new LibraryMismatchError(lib.name, serverName(server));
  try {
    await (code === null ? server.call('FUNCTION', 'LOAD', lib.code) : server.call('FUNCTION', 'LOAD', 'REPLACE', lib.code));
    return true;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // (another client loaded it meanwhile: check what it loaded)
    if (/already exists/.test(message)) return ensureOn(server, lib, replace);
    if (/^NOPERM/.test(message)) {
      throw new ScriptLoadError(
        `Rota's function library ${lib.name} is not loaded, and this user may not load it (FUNCTION LOAD was refused: ${message}). ` +
          'Load it with `rota migrate` as the deploy user (docs/operations.md#acl).',
      );
    }
    throw new ScriptLoadError(`cannot load Rota's function library into Redis (it needs Redis 7.0 or newer): ${message}`);
  }
}

/** host:port of a server, for messages. */
function serverName(server: Redis): string {
  const o = server.options ?? {};
  return `${o.host ?? '?'}:${o.port ?? '?'}`;
}

/** The servers where `client` runs scripts: its own, or every primary of a cluster. */
function serversOf(client: Redis): Redis[] {
  const cluster = client as unknown as Cluster;
  return typeof cluster.nodes === 'function' ? cluster.nodes('master') : [client];
}

/**
 * Loads Rota's function library where `client` runs scripts (its server, or every primary of a
 * cluster) unless it is there already, as a deploy does (`rota migrate`): the user needs
 * `FUNCTION LOAD` and `FUNCTION LIST`. With `replace`, a library of Rota's name that holds other
 * code is replaced; without, it is refused with a {@link LibraryMismatchError}. Resolves whether
 * a server's library was loaded or replaced.
 * @throws {ScriptLoadError} when the user may not load or list functions, or Redis is older than 7.0.
 */
export async function loadLibrary(
  client: Redis,
  options: { replace?: boolean } = {},
  lib: Library = rotaLibrary(),
): Promise<boolean> {
  const changed = await Promise.all(serversOf(client).map((server) => ensureOn(server, lib, options.replace ?? false)));
  return changed.some(Boolean);
}

/**
 * The library each client was checked to hold (its name), before its first script call: a
 * client checks the code once, so a call costs one look-up here.
 */
const checked = new WeakMap<object, string>();

/** The check under way per client, which the calls made meanwhile wait for (one check, not one each). */
const checking = new WeakMap<object, Promise<void>>();

/** {@link checkLibrary}, once at a time per client. */
function checkOnce(client: Redis, lib: Library): Promise<void> {
  let pending = checking.get(client);
  if (!pending) {
    pending = checkLibrary(client, lib).finally(() => checking.delete(client));
    checking.set(client, pending);
  }
  return pending;
}

/**
 * Checks that the servers of `client` hold `lib` as built, loading it where it is missing when
 * the user may: what a client does before its first script call (and an executor or a scheduler
 * as it starts). Other code under the library's name is refused with a {@link LibraryMismatchError}.
 * @throws {ScriptLoadError} when it is missing and the user may not load it (or list functions).
 */
export async function checkLibrary(client: Redis, lib: Library = rotaLibrary()): Promise<void> {
  await Promise.all(serversOf(client).map((server) => ensureOn(server, lib, false)));
  checked.set(client, lib.name);
}

/** An argument of a script call. */
export type Arg = string | number | Buffer;

/**
 * Runs script `script` of `lib`; replies come back as Buffers when `buffers` is set
 * (binary-safe), else strings. A server without the library (new, or restarted without
 * persistence) gets it loaded first. Before a client's first call, the library's code on the
 * server is checked against this one's (a {@link LibraryMismatchError} when it differs). For the
 * stores only: everything else calls them.
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
  if (checked.get(client) !== lib.name) await checkOnce(client, lib);
  const call = () => client[buffers ? 'callBuffer' : 'call']('FCALL', fn, keys.length, ...keys, ...args) as Promise<T>;
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof Error) || !/Function not found/i.test(err.message)) throw err;
    // (the server lost it: a restart without persistence, a FUNCTION FLUSH)
    await checkOnce(client, lib);
    return call();
  }
}

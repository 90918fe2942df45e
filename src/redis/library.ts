/**
 * Rota's Lua scripts, loaded into Redis as one function library (Redis 7+ `FUNCTION LOAD`) and
 * run with `FCALL`. Each file in `lua/` is one atomic operation; the `--- @include "includes/<name>"`
 * lines of a script or an include name the helpers in `lua/includes/` it uses. The helpers are
 * defined when the library loads, not on every call (as they would be with EVAL, where defining
 * them costs a call about as much as ten Redis commands).
 *
 * The library holds every include once, in its own `do ... end` block, and each script as a
 * function. An include's `--- @export a, b` lines name what it gives other files: those of its
 * top-level locals (`local` at the start of a line) that other files use. The builder declares
 * them as locals of the library before the include's block, where their `local` is dropped so
 * that the block assigns them; everything else an include defines stays inside its block. So a
 * helper is compiled once (the library was some 700 KB when each script's block held a copy of
 * its includes, and FUNCTION LOAD blocked Redis five times as long), and the library's own
 * locals are only the wire values and the exports (Lua allows 200 in scope in a function, the
 * library's main chunk included). A name another file uses but its include does not export is
 * an undefined global to luacheck (`npm run lint:lua`), which checks the library as built.
 *
 * Each key builder call of a script or include, `KEY.job(prefix, id)`, is expanded where it
 * stands into the key name it stands for (expandKeyBuilders in ./keys.ts): the scripts name their
 * keys through the one key layout, at no cost per call and no local of the library.
 *
 * The library's name carries a hash of its code, so that executors of two Rota versions can run
 * side by side on one Redis (a rolling upgrade): each calls its own functions.
 *
 * Only the stores call the scripts, through their shard's ScriptRunner (./script-runner.ts), which
 * calls {@link runFunction}: the stores hold every script's arguments and reply format.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';
import { LibraryMismatchError, ScriptLoadError } from '../errors.js';
import { expandKeyBuilders } from './keys.js';

export { ScriptLoadError };

import { inlineWireScalars, WIRE_SCALARS, wireInclude } from './wire.js';

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
  throw new ScriptLoadError('cannot find the lua/ folder of the rota package');
}

const INCLUDE = /^--- @include "([^"]+)"[ \t]*$/gm;
const EXPORT = /^--- @export (.*)$/gm;
/** The builder's own lines (includes, exports), left out of the library (as empty lines). */
const DIRECTIVE = /^--- @(include|export) .*$/gm;
/** A script's function flags (`--- @flags no-writes`): Redis runs a `no-writes` function while it refuses writes. */
const FLAGS = /^--- @flags ([a-z-]+(?: [a-z-]+)*)\s*$/m;
/** A top-level declaration: `local function f`, or `local a, b` with or without values. */
const LOCAL_FUNCTION = /^local function ([A-Za-z_]\w*)/;
const LOCALS = /^local ([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)([ \t]*)(=.*|--.*)?$/;
const NAME = /^[A-Za-z_]\w*$/;

/** The include generated from src/redis/wire.ts, emitted before every other include. */
export const WIRE_INCLUDE = 'includes/wire';

/** What every script call runs first (an export of includes/common): it empties what the last call collected. */
export const CALL_START = 'beginCall';

/** The includes a Lua text declares, in the order it declares them. */
function declaredIncludes(text: string): string[] {
  return [...text.matchAll(INCLUDE)].map((m) => m[1]);
}

/** The names an include's `--- @export` lines give other files, in order. */
export function declaredExports(text: string): string[] {
  return [...text.matchAll(EXPORT)].flatMap((m) => m[1].split(',').map((n) => n.trim()));
}

/**
 * The top-level locals a Lua text declares (`local` at the start of a line), each with its line
 * (from 0). The wire include's are its exports; another include's, its exports and its privates.
 */
export function topLevelNames(text: string): Array<[string, number]> {
  const names: Array<[string, number]> = [];
  text.split('\n').forEach((line, at) => {
    const fn = LOCAL_FUNCTION.exec(line);
    const list = fn
      ? [fn[1]]
      : (LOCALS.exec(line)?.[1]
          .split(',')
          .map((n) => n.trim()) ?? []);
    for (const name of list) names.push([name, at]);
  });
  return names;
}

/**
 * The includes the scripts need, each after the includes it declares (a depth-first walk from
 * the scripts' declarations in file order, `includes/common` first): the order they are
 * defined in the library. Throws on an include that does not exist or that depends on itself.
 */
export function orderIncludes(dir: string, scripts: Array<[string, string]>): string[] {
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (inc: string, from: string, path: string[]) => {
    if (inc === WIRE_INCLUDE || state.get(inc) === 'done') return;
    if (state.get(inc) === 'visiting')
      throw new ScriptLoadError(`Lua includes depend on each other in a cycle: ${[...path, inc].join(' -> ')}`);
    const file = join(dir, `${inc}.lua`);
    if (!existsSync(file)) throw new ScriptLoadError(`${from} includes "${inc}", but there is no ${inc}.lua in ${dir}`);
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
    throw new ScriptLoadError(`${WIRE_INCLUDE} is generated from src/redis/wire.ts: remove ${WIRE_INCLUDE}.lua from ${dir}`);
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
 * Lines of the library's code, all from one file of `lua/` (or the generated `includes/wire`):
 * with `source`, line i of `text` is line i + 1 of the file; else the builder wrote them around
 * the file's lines. (For reports on the library as built: scripts/lint-lua.mjs.)
 */
export interface LibraryChunk {
  file: string;
  text: string;
  source: boolean;
}

/**
 * Include `inc`'s text as its block in the library: the builder's lines emptied, and the `local`
 * of each declaration of an export dropped, so that the block assigns the library's local of
 * that name. A line declares exports or private names, not both, when it gives them values.
 */
function exportingText(inc: string, text: string, exports: Set<string>): string {
  const assigned = new Set<string>();
  const lines = text
    .replace(DIRECTIVE, '')
    .split('\n')
    .map((line, at) => {
      const fn = LOCAL_FUNCTION.exec(line);
      if (fn) {
        if (!exports.has(fn[1])) return line;
        assigned.add(fn[1]);
        return line.slice('local '.length);
      }
      const m = LOCALS.exec(line);
      if (!m) return line;
      const names = m[1].split(',').map((n) => n.trim());
      const exported = names.filter((n) => exports.has(n));
      if (exported.length === 0) return line;
      for (const n of exported) assigned.add(n);
      const values = m[3]?.startsWith('=');
      if (exported.length === names.length) return values ? line.slice('local '.length) : (m[3] ?? '');
      if (values) {
        throw new ScriptLoadError(
          `${inc}.lua:${at + 1} gives values to exports (${exported.join(', ')}) and private names together: declare its exports on a line of their own`,
        );
      }
      return `local ${names.filter((n) => !exports.has(n)).join(', ')}${m[2]}${m[3] ?? ''}`;
    });
  const missing = [...exports].filter((n) => !assigned.has(n));
  if (missing.length) {
    throw new ScriptLoadError(
      `${inc}.lua exports ${missing.join(', ')}, which its top level does not declare (a \`local\` at the start of a line)`,
    );
  }
  return lines.join('\n');
}

/** `local a, b, ...` declaring `names`, on lines of at most some 100 characters. */
function declareLocals(names: string[]): string[] {
  const lines: string[] = [];
  let line = '';
  for (const name of names) {
    if (line && line.length + name.length > 100) {
      lines.push(line);
      line = '';
    }
    line = line ? `${line}, ${name}` : `local ${name}`;
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * The library's code from the scripts in `dir` ({@link libraryParts}) as chunks of lines: the
 * header, the generated `includes/wire` (its values are the library's first locals), then each
 * include once in library order, as the declaration of its exports followed by its block
 * (`local <exports>` and `do -- <include> ... end`), then each script as the function
 * `<name>_<script>` registered with its flags. Every call begins with `beginCall()`
 * (includes/common), which empties what the last call collected.
 */
export function libraryChunks(dir: string, name: string): { chunks: LibraryChunk[]; functions: Map<string, string> } {
  const { includes, scripts } = libraryParts(dir);
  const chunks: LibraryChunk[] = [{ file: 'library', text: `#!lua name=${name}`, source: false }];
  const [[, wire], ...helpers] = includes;
  chunks.push({ file: WIRE_INCLUDE, text: wire.replace(/\n$/, ''), source: true });
  const exporter = new Map<string, string>(
    [...topLevelNames(wire).map(([n]) => n), ...WIRE_SCALARS.keys()].map((n) => [n, WIRE_INCLUDE]),
  );
  for (const [inc, text] of helpers) {
    const exports = declaredExports(text);
    for (const n of exports) {
      if (!NAME.test(n)) throw new ScriptLoadError(`${inc}.lua exports "${n}", which is not a Lua name`);
      const other = exporter.get(n);
      if (other) throw new ScriptLoadError(`${inc}.lua exports ${n}, which ${other} defines already`);
      exporter.set(n, inc);
    }
    chunks.push({ file: inc, text: [...declareLocals(exports), `do -- ${inc}`].join('\n'), source: false });
    chunks.push({
      file: inc,
      text: expandKeyBuilders(inlineWireScalars(exportingText(inc, text, new Set(exports))), inc),
      source: true,
    });
    chunks.push({ file: inc, text: 'end', source: false });
  }
  if (exporter.get(CALL_START) !== 'includes/common') throw new ScriptLoadError(`includes/common must export ${CALL_START}`);
  const functions = new Map<string, string>();
  for (const [script, text] of scripts) {
    if (declaredExports(text).length)
      throw new ScriptLoadError(`${script}.lua has --- @export lines: only includes export names`);
    const fn = `${name}_${script.replace(/-/g, '_')}`;
    functions.set(script, fn);
    const flags = FLAGS.exec(text)?.[1].split(' ') ?? [];
    const head =
      flags.length === 0
        ? `redis.register_function('${fn}', function(KEYS, ARGV)`
        : `redis.register_function{function_name='${fn}', flags={${flags.map((f) => `'${f}'`).join(', ')}}, callback=function(KEYS, ARGV)`;
    chunks.push({ file: script, text: `${head}\n${CALL_START}()`, source: false });
    chunks.push({ file: script, text: expandKeyBuilders(inlineWireScalars(text.replace(DIRECTIVE, '')), script), source: true });
    chunks.push({ file: script, text: flags.length === 0 ? 'end)' : 'end}', source: false });
  }
  return { chunks, functions };
}

/**
 * Builds the library from the scripts in `dir` (see {@link libraryChunks}), named `rota_` and a
 * hash of its code.
 */
export function buildLibrary(dir: string): Library {
  const code = (chunks: LibraryChunk[]) => `${chunks.map((c) => c.text).join('\n')}\n`;
  const hash = createHash('sha1')
    .update(code(libraryChunks(dir, 'rota').chunks))
    .digest('hex');
  const name = `rota_${hash.slice(0, 12)}`;
  const { chunks, functions } = libraryChunks(dir, name);
  return { name, code: code(chunks), functions };
}

let library: Library | undefined;

/** Rota's library, built from its `lua/` folder on first use. */
export function rotaLibrary(): Library {
  library ??= buildLibrary(luaDir());
  return library;
}

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
 * @throws {@link ScriptLoadError} when the user may not load or list functions, or Redis is older than 7.0.
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
 * @throws {@link ScriptLoadError} when it is missing and the user may not load it (or list functions).
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
  if (!fn) throw new ScriptLoadError(`the library has no script named ${script}`);
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

/**
 * Loads the Lua scripts in `lua/`, resolving `--- @include "name"` lines (each file once), and
 * runs them with EVALSHA, falling back to EVAL when the server does not know the script yet.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';

export type ScriptName = 'submit' | 'take' | 'start' | 'finish' | 'heartbeat' | 'recover' | 'cancel' | 'group' | string;

interface Script {
  name: string;
  lua: string;
  sha: string;
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

function load(name: string, dir: string): Script {
  const seen = new Set<string>();
  const expand = (file: string): string =>
    readFileSync(join(dir, `${file}.lua`), 'utf8').replace(INCLUDE, (_m, inc: string) => {
      if (seen.has(inc)) return '';
      seen.add(inc);
      return expand(inc);
    });
  const lua = expand(name);
  return { name, lua, sha: createHash('sha1').update(lua).digest('hex') };
}

const cache = new Map<string, Script>();
let dir: string | undefined;

function script(name: ScriptName): Script {
  let s = cache.get(name);
  if (!s) {
    dir ??= luaDir();
    s = load(name, dir);
    cache.set(name, s);
  }
  return s;
}

type Arg = string | number | Buffer;

/** Runs a script; replies come back as Buffers when `buffers` is set (binary-safe), else strings. */
export async function runScript<T = unknown>(
  client: Redis,
  name: ScriptName,
  keys: string[],
  args: Arg[],
  buffers = false,
): Promise<T> {
  const s = script(name);
  try {
    return (await client[buffers ? 'callBuffer' : 'call']('EVALSHA', s.sha, keys.length, ...keys, ...args)) as T;
  } catch (err) {
    if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
    return (await client[buffers ? 'callBuffer' : 'call']('EVAL', s.lua, keys.length, ...keys, ...args)) as T;
  }
}

/** Loads every named script into the server's script cache ahead of use. */
export async function preload(client: Redis, names: ScriptName[]): Promise<void> {
  for (const n of names) await client.script('LOAD', script(n).lua);
}

/** The Lua sources of the function library, for tests that read them as text. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The lua/ folder. */
export const LUA_DIR = join(import.meta.dirname, '../../lua');

/** Every Lua file, relative to {@link LUA_DIR}: the scripts, then `includes/<name>.lua`. */
export const luaFiles: readonly string[] = [
  ...readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua')),
  ...readdirSync(join(LUA_DIR, 'includes'))
    .filter((f) => f.endsWith('.lua'))
    .map((f) => `includes/${f}`),
];

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LUA_DIR, luaFiles } from '../helpers/lua.js';

const LUA = LUA_DIR;
const files = luaFiles;

describe('the Lua scripts', () => {
  // Redis built with its own Lua (the official images, Redis built from source) refuses a script
  // with "nesting of [[...]] is deprecated"; Debian's build, linked to the system Lua, accepts it.
  it('never nest [[ inside a long comment or string', () => {
    expect(files.length).toBeGreaterThan(10);
    const nested: string[] = [];
    for (const f of files) {
      const text = readFileSync(join(LUA, f), 'utf8');
      for (const m of text.matchAll(/\[\[([\s\S]*?)\]\]/g)) {
        if (m[1].includes('[[')) nested.push(`${f}: ${m[1].slice(m[1].indexOf('[['), m[1].indexOf('[[') + 40)}`);
      }
    }
    expect(nested).toEqual([]);
  });
});

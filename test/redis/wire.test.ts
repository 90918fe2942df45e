/**
 * The values Lua and TypeScript share are defined once, in src/redis/wire.ts: the library gets
 * them as the generated include `includes/wire`, and no Lua file keeps a copy of its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rotaLibrary, runFunction, WIRE_INCLUDE } from '../../src/redis/library.js';
import { LUA_WIRE, wireInclude } from '../../src/redis/wire.js';
import { closeAll, rawClient } from '../helpers/setup.js';

afterEach(closeAll);

const LUA = join(import.meta.dirname, '../../lua');
const files = [
  ...readdirSync(LUA).filter((f) => f.endsWith('.lua')),
  ...readdirSync(join(LUA, 'includes')).filter((f) => f.endsWith('.lua')).map((f) => `includes/${f}`),
];

describe('the wire values', () => {
  it('are what the library defines, before any other include', () => {
    const { code } = rotaLibrary();
    const include = wireInclude();
    expect(code.indexOf(include)).toBeGreaterThan(0);
    // the first line after the library's header
    expect(code.split('\n')[1]).toBe(include.split('\n')[0]);
    expect(include.split('\n').filter((l) => l.startsWith('local ')).map((l) => l.split(' ')[1])).toEqual(Object.keys(LUA_WIRE));
  });

  it('reach the scripts as wire.ts has them', async () => {
    // A copy of the library with one script more, that answers every wire value as JSON.
    const lib = rotaLibrary();
    const dump = `return cjson.encode({ ${Object.keys(LUA_WIRE).map((n) => `${n} = ${n}`).join(', ')} })`;
    const name = `${lib.name}x`;
    const fn = `${name}_dump`;
    const code = lib.code.replace(`#!lua name=${lib.name}`, `#!lua name=${name}`).replaceAll(`'${lib.name}_`, `'${name}_`) +
      `\nredis.register_function('${fn}', function(KEYS, ARGV)\n${dump}\nend)\n`;
    const r = rawClient();
    try {
      await r.call('FUNCTION', 'LOAD', 'REPLACE', code);
      const got = JSON.parse(await runFunction<string>(r, { name, code, functions: new Map([['dump', fn]]) }, 'dump', ['k'], []));
      expect(got).toEqual(JSON.parse(JSON.stringify(LUA_WIRE)));
    } finally {
      await r.call('FUNCTION', 'DELETE', name).catch(() => undefined);
      r.disconnect();
    }
  });

  it('are defined by no Lua file itself', () => {
    expect(files).not.toContain(`${WIRE_INCLUDE}.lua`);
    const copies: string[] = [];
    for (const f of files) {
      const text = readFileSync(join(LUA, f), 'utf8');
      for (const name of Object.keys(LUA_WIRE)) {
        // a local of that name (alone or in a list), a global assignment, or a function
        const defines = new RegExp(`^\\s*(local\\s+(function\\s+)?([\\w\\s,]*,\\s*)?${name}\\b|${name}\\s*=[^=]|function\\s+${name}\\b)`, 'm');
        if (defines.test(text)) copies.push(`${f}: ${name}`);
      }
    }
    expect(copies).toEqual([]);
  });
});

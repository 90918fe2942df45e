/**
 * The values Lua and TypeScript share are defined once, in src/redis/wire.ts: the library gets
 * them as the generated include `includes/wire`, and no Lua file keeps a copy of its own.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { packDescription, unpackDescription } from '../../src/redis/job-codec.js';
import { luaKeyBuilders, periodicKeys, queueKeys } from '../../src/redis/keys.js';
import { buildLibrary, rotaLibrary, runFunction, WIRE_INCLUDE } from '../../src/redis/library.js';
import { HISTORY_TTL_S, inlineWireScalars, LUA_WIRE, WIRE_SCALARS, type WireValue, wireInclude } from '../../src/redis/wire.js';
import { LUA_DIR, luaFiles } from '../helpers/lua.js';
import { closeAll, rawClient } from '../helpers/setup.js';

afterEach(closeAll);

const LUA = LUA_DIR;
const files = luaFiles;

describe('the wire values', () => {
  it('are what the library defines, before any other include', () => {
    const { code } = rotaLibrary();
    const include = wireInclude();
    expect(code.indexOf(include)).toBeGreaterThan(0);
    // the first line after the library's header
    expect(code.split('\n')[1]).toBe(include.split('\n')[0]);
    // a local per table; the numbers and strings are written into the scripts where named
    expect(
      include
        .split('\n')
        .filter((l) => l.startsWith('local '))
        .map((l) => l.split(' ')[1]),
    ).toEqual(Object.keys(LUA_WIRE).filter((n) => !WIRE_SCALARS.has(n)));
    expect(WIRE_SCALARS.size).toBeGreaterThan(10);
    expect(code).not.toMatch(new RegExp(`^local (${[...WIRE_SCALARS.keys()].join('|')}) `, 'm'));
  });

  it('that are numbers or strings are written as literals where a script names them, and only there', () => {
    expect(
      inlineWireScalars(
        "if x == SCHEMA_VERSION then return { SCHEMA_VERSION = SCHEMA_VERSION, t.SCHEMA_VERSION, 'SCHEMA_VERSION' } end",
      ),
    ).toBe(
      `if x == ${LUA_WIRE.SCHEMA_VERSION} then return { SCHEMA_VERSION = ${LUA_WIRE.SCHEMA_VERSION}, t.SCHEMA_VERSION, 'SCHEMA_VERSION' } end`,
    );
  });

  /**
   * Runs `body` (Lua, given ARGV) as the script `probe` of a copy of Rota's scripts, with the
   * includes it names in scope (and every wire value); answers its reply.
   */
  async function runInLibrary<T>(body: string, args: Array<string | Buffer>, includes: string[] = []): Promise<T> {
    const dir = mkdtempSync(join(tmpdir(), 'rota-probe-'));
    cpSync(LUA, dir, { recursive: true });
    writeFileSync(join(dir, 'probe.lua'), [...includes.map((i) => `--- @include "${i}"`), body].join('\n'));
    const lib = buildLibrary(dir);
    const r = rawClient();
    try {
      await r.call('FUNCTION', 'LOAD', 'REPLACE', lib.code);
      return await runFunction<T>(r, lib, 'probe', ['k'], args, true);
    } finally {
      await r.call('FUNCTION', 'DELETE', lib.name).catch(() => undefined);
      r.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('reach the scripts as wire.ts has them', async () => {
    const dump = `return cjson.encode({ ${Object.keys(LUA_WIRE)
      .map((n) => `${n} = ${n}`)
      .join(', ')} })`;
    const got = JSON.parse(String(await runInLibrary<Buffer>(dump, [])));
    expect(got).toEqual(JSON.parse(JSON.stringify(LUA_WIRE)));
  });

  it('come with key builders for the scripts that build the names src/redis/keys.ts builds', async () => {
    const builders = luaKeyBuilders();
    // each builder called with arguments of its own (and a prefix of a shard of a queue)
    const prefix = queueKeys('q.x', 2, 4).prefix;
    const argsOf = (name: string, n: number) => Array.from({ length: n }, (_, i) => `${name}-${i}'\\`);
    const lua = `return cjson.encode({ ${builders
      .map(
        (b) =>
          `${b.name} = KEY.${b.name}(ARGV[1]${argsOf(b.name, b.params.length)
            .map((a) => `, ${JSON.stringify(a)}`)
            .join('')})`,
      )
      .join(', ')} })`;
    const got = JSON.parse(String(await runInLibrary<Buffer>(lua, [prefix])));
    const q = queueKeys('q.x', 2, 4) as unknown as Record<string, unknown>;
    const p = periodicKeys('q.x') as unknown as Record<string, unknown>;
    const want: Record<string, string> = {};
    for (const b of builders) {
      const periodic = /^p[A-Z]/.test(b.name) && !(b.name in q);
      const field = periodic ? `${b.name[1].toLowerCase()}${b.name.slice(2)}` : b.name;
      const v = (periodic ? p : q)[field];
      // (the periodic keys are in the home shard: its prefix swapped for the shard's)
      const name = typeof v === 'function' ? (v as (...a: string[]) => string)(...argsOf(b.name, b.params.length)) : String(v);
      want[b.name] = periodic ? prefix + name.slice(String(p.prefix).length) : name;
    }
    expect(Object.keys(want).length).toBeGreaterThan(40);
    expect(got).toEqual(want);
  });

  it('give a job description one field order on both sides', async () => {
    const d = {
      task: 't',
      group: 'g',
      priority: 'high' as const,
      maxRetries: 7,
      subject: 's',
      maxRuntime: 500,
      tracker: 'p',
      occurrence: 1234,
    };
    // written here, read by the scripts (describeJob: priority and retry limit)
    for (const args of [Buffer.alloc(0), pack({ a: 1 })]) {
      const read = await runInLibrary<[Buffer, number]>(
        'local p, m = describeJob(ARGV[1])\nreturn { p, m }',
        [Buffer.concat(packDescription(d, args))],
        ['includes/jobs'],
      );
      expect([read[0].toString(), read[1]]).toEqual(['high', 7]);
    }
    // written by the scripts (a periodic run's, see periodic-stage), read here
    const packed = await runInLibrary<Buffer>(
      "return packDescription({ task = 't', group = 'g', priority = 'high', maxRetries = 7, subject = 's', maxRuntime = 500, tracker = 'p', occurrence = 1234 }, ARGV[1])",
      [pack({ a: 1 })],
      ['includes/addJob'],
    );
    expect(unpackDescription(packed)).toEqual({ ...d, args: { a: 1 } });
  });

  it('are defined by no Lua file itself', () => {
    expect(files).not.toContain(`${WIRE_INCLUDE}.lua`);
    const copies: string[] = [];
    for (const f of files) {
      const text = readFileSync(join(LUA, f), 'utf8');
      for (const name of Object.keys(LUA_WIRE)) {
        // a local of that name (alone or in a list), a global assignment, or a function
        const defines = new RegExp(
          `^\\s*(local\\s+(function\\s+)?([\\w\\s,]*,\\s*)?${name}\\b|${name}\\s*=[^=]|function\\s+${name}\\b)`,
          'm',
        );
        if (defines.test(text)) copies.push(`${f}: ${name}`);
      }
    }
    expect(copies).toEqual([]);
  });

  it('have no copy by value in a Lua file: the longer numbers (a TTL, the longest delay) appear nowhere else', () => {
    const numbers = new Set<string>();
    const collect = (v: WireValue) => {
      if (typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v))) numbers.add(String(v));
      else if (typeof v === 'object' && !Array.isArray(v)) for (const x of Object.values(v)) collect(x as WireValue);
    };
    for (const v of Object.values(LUA_WIRE)) collect(v);
    const distinctive = [...numbers].filter((n) => n.length >= 4);
    // the history TTLs among them (once copied into includes/history)
    for (const s of Object.values(HISTORY_TTL_S)) expect(distinctive).toContain(String(s));
    const copies: string[] = [];
    for (const f of files) {
      const code = readFileSync(join(LUA, f), 'utf8')
        .replace(/--\[\[[\s\S]*?\]\]/g, '')
        .replace(/--.*$/gm, '');
      for (const n of distinctive) if (new RegExp(`(?<![\\w.])${n}(?![\\w.])`).test(code)) copies.push(`${f}: ${n}`);
    }
    expect(copies).toEqual([]);
  });
});

/** The scripts as one Redis function library: loaded on demand, and no call sees the last one's state. */
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { parseEntry } from '../../src/queue/events.js';
import { buildLibrary, libraryParts, orderIncludes, rotaLibrary } from '../../src/redis/library.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { wireInclude } from '../../src/redis/wire.js';
import { closeAll, openQueue, privateRedis, rawClient, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('the function library', () => {
  // FUNCTION FLUSH on a server of its own, not under the other test files running beside it
  const own = privateRedis();

  it('is loaded again when the server lost it, and the call goes through', async () => {
    const name = uniqueQueue();
    const q = openQueue(name, { connection: own.server.url });
    const r = new Redis(own.server.url);
    try {
      await q.submit({ id: 'a', task: 't' });
      const libs = (await r.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'rota_*')) as unknown[];
      expect(libs.length).toBeGreaterThan(0);
      // as after a restart without persistence
      await r.call('FUNCTION', 'FLUSH');
      await q.submit({ id: 'b', task: 't' });
      expect((await q.getJob('b'))?.state).toBe('waiting');
      expect(((await r.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'rota_*')) as unknown[]).length).toBeGreaterThan(0);
    } finally {
      r.disconnect();
    }
  });

  it("starts every call afresh: one call's state changes and counts are not carried into the next", async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const r = rawClient();
    try {
      await q.submit({ id: 'a', task: 't' });
      await q.submit({ id: 'b', task: 't', group: 'g2' });
      const entries = (await r.xrange(`{rota:${name}}:events`, '-', '+')) as Array<[string, string[]]>;
      const waiting = entries.map(([id, fields]) =>
        parseEntry(id, fields)
          .filter((e) => e.state === 'waiting')
          .map((e) => e.id),
      );
      expect(waiting).toEqual([['a'], ['b']]);
      expect((await q.counts()).waiting).toBe(2);
    } finally {
      r.disconnect();
    }
  });

  it('is named after its code, so that two versions load side by side and each calls its own functions', async () => {
    const lua = join(import.meta.dirname, '../../lua');
    const copy = mkdtempSync(join(tmpdir(), 'rota-lua-'));
    const r = rawClient();
    try {
      cpSync(lua, copy, { recursive: true });
      appendFileSync(join(copy, 'take.lua'), '\n-- a later version\n');
      const [now, next] = [buildLibrary(lua), buildLibrary(copy)];
      expect(next.name).not.toBe(now.name);
      for (const l of [now, next]) await r.call('FUNCTION', 'LOAD', 'REPLACE', l.code);
      for (const l of [now, next]) {
        const store = new QueueStore(r, uniqueQueue(), { maxEvents: 100, library: l });
        expect(await store.take(1, { workerId: 'w', countingScheme: [2, 1], leaseMs: 1000 })).toEqual({ jobs: [], nextDue: -1 });
      }
    } finally {
      await r.call('FUNCTION', 'DELETE', buildLibrary(copy).name).catch(() => undefined);
      r.disconnect();
      rmSync(copy, { recursive: true, force: true });
    }
  });
  it("keeps room for 10 more locals: Lua allows 200 in scope in the main chunk (the wire values, the includes' exports, and one include's block at a time)", async () => {
    // Locals declared first are in scope at every point of the helpers: the library loads with
    // them only while every point has room for them (past 200 it fails to compile, and no
    // script runs).
    const lib = rotaLibrary();
    const name = `${lib.name}x`;
    const spare = `local ${Array.from({ length: 10 }, (_, i) => `_spare${i}`).join(', ')}`;
    const code = lib.code
      .replace(`#!lua name=${lib.name}\n`, `#!lua name=${name}\n${spare}\n`)
      .replaceAll(`'${lib.name}_`, `'${name}_`);
    const r = rawClient();
    try {
      await expect(r.call('FUNCTION', 'LOAD', 'REPLACE', code)).resolves.toBe(name);
      const over = `local ${Array.from({ length: 200 }, (_, i) => `_over${i}`).join(', ')}`;
      await expect(r.call('FUNCTION', 'LOAD', 'REPLACE', code.replace(spare, over))).rejects.toThrow(/more than 200 local/);
    } finally {
      await r.call('FUNCTION', 'DELETE', name).catch(() => undefined);
      r.disconnect();
    }
  });
});

describe("a client's check of the library", () => {
  const own = privateRedis();

  it('reads the library once for the calls a new client makes together', async () => {
    const client = new Redis(own.server.url);
    try {
      const store = new QueueStore(client, uniqueQueue('check-once'), { maxEvents: 100 });
      await own.admin.call('CONFIG', 'RESETSTAT');
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => store.scripts.fcall<number>('version', store.keys.meta, [])),
      );
      expect(new Set(answers).size).toBe(1);
      const stats = (await own.admin.info('commandstats')).split('\n');
      const list = stats.find((l) => l.startsWith('cmdstat_function|list:'));
      expect(list).toMatch(/^cmdstat_function\|list:calls=1,/);
    } finally {
      client.disconnect();
    }
  });
});

describe('the library builder', () => {
  /** A folder of Lua files: name (without .lua) -> text. */
  const folder = (files: Record<string, string>): string => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-lua-'));
    mkdirSync(join(dir, 'includes'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, `${name}.lua`), text);
    return dir;
  };
  const inc = (...names: string[]) => names.map((n) => `--- @include "includes/${n}"\n`).join('');
  /** What every library's includes/common gives: the start of each call. */
  const common = '--- @export beginCall\nlocal function beginCall() end\n';

  it('defines each include after those it declares, the generated wire include first', () => {
    const dir = folder({
      'includes/common': `${common}-- mark common\n`,
      'includes/a': `${inc('b', 'common')}-- mark a\n`,
      'includes/b': `${inc('c')}-- mark b\n`,
      'includes/c': `${inc('common', 'wire')}-- mark c\n`,
      submit: `${inc('a')}return 1\n`,
    });
    try {
      expect(orderIncludes(dir, [['submit', inc('a')]])).toEqual(['includes/common', 'includes/c', 'includes/b', 'includes/a']);
      const { code } = buildLibrary(dir);
      const at = (text: string) => code.indexOf(text);
      expect(at(wireInclude())).toBeGreaterThan(0);
      const marks = ['common', 'c', 'b', 'a'].map((m) => at(`-- mark ${m}\n`));
      expect(marks.every((m) => m > at(wireInclude()))).toBe(true);
      expect(marks).toEqual([...marks].sort((x, y) => x - y));
      expect(code).not.toContain('@include');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses includes that depend on each other in a cycle, naming it', () => {
    const dir = folder({ 'includes/common': common, 'includes/a': inc('b'), 'includes/b': inc('a'), submit: inc('a') });
    try {
      expect(() => buildLibrary(dir)).toThrow('includes/a -> includes/b -> includes/a');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an include that does not exist, naming who includes it', () => {
    const dir = folder({ 'includes/common': common, 'includes/a': inc('missing'), submit: inc('a') });
    try {
      expect(() => buildLibrary(dir)).toThrow(/includes\/a\.lua includes "includes\/missing"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('holds each include once, in its own block, whatever number of scripts declares it', () => {
    const lua = join(import.meta.dirname, '../../lua');
    const { includes, scripts } = libraryParts(lua);
    const { code } = rotaLibrary();
    for (const [name] of includes.slice(1)) expect(code.split(`\ndo -- ${name}\n`).length - 1, name).toBe(1);
    // (the scripts and includes as written, and the lines the builder adds around each)
    const sources = [...includes, ...scripts].reduce((n, [, text]) => n + text.length, 0);
    expect(code.length).toBeLessThan(sources + 200 * (includes.length + scripts.length));
  });

  it('runs each include once: the scripts share its state, and reach only what it exports', async () => {
    const dir = folder({
      'includes/common': common,
      'includes/counter': `${inc('common')}--- @export bump\nlocal n = 0\nlocal function bump() n = n + 1 return n end\n`,
      a: `${inc('counter')}return bump()\n`,
      b: `${inc('counter')}return bump()\n`,
      peek: `${inc('counter')}return n\n`,
    });
    const lib = buildLibrary(dir);
    const r = rawClient();
    try {
      await r.call('FUNCTION', 'LOAD', 'REPLACE', lib.code);
      const fcall = (script: string) => r.call('FCALL', lib.functions.get(script)!, 0);
      expect([await fcall('a'), await fcall('b'), await fcall('a')]).toEqual([1, 2, 3]);
      await expect(fcall('peek')).rejects.toThrow(/nonexistent global variable 'n'/);
    } finally {
      await r.call('FUNCTION', 'DELETE', lib.name).catch(() => undefined);
      r.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an export its include does not declare at its top level, or that another include exports', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [
        { 'includes/a': '--- @export helper\nlocal function other() end\n' },
        /includes\/a\.lua exports helper, which its top level does not declare/,
      ],
      [{ 'includes/a': '--- @export helper\ndo\n  local function helper() end\nend\n' }, /exports helper, which its top level/],
      [
        {
          'includes/a': '--- @export x\nlocal x = 1\n',
          'includes/b': `${inc('a')}--- @export x\nlocal x = 2\n`,
          submit: inc('b'),
        },
        /includes\/b\.lua exports x, which includes\/a defines already/,
      ],
      [
        { 'includes/a': '--- @export TAKEN_WIDTH\nlocal TAKEN_WIDTH = 4\n' },
        /exports TAKEN_WIDTH, which includes\/wire defines already/,
      ],
      [
        { 'includes/a': '--- @export x\nlocal x, y = 1, 2\n' },
        /includes\/a\.lua:2 gives values to exports \(x\) and private names together/,
      ],
      [
        { 'includes/a': '--- @export x\nlocal x = 1\n', submit: `${inc('a')}--- @export y\nlocal y = x\n` },
        /submit\.lua has --- @export lines/,
      ],
    ];
    for (const [files, error] of cases) {
      const dir = folder({ 'includes/common': common, submit: inc('a'), ...files });
      try {
        expect(() => buildLibrary(dir)).toThrow(error);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('declares an export as a local of the library before its block, which assigns it', () => {
    const dir = folder({
      'includes/common': common,
      'includes/a': `${inc('common')}--- @export f, x, y\nlocal x, y, z\nlocal function f() return z end\nlocal function g() end\n`,
      submit: `${inc('a')}return f()\n`,
    });
    try {
      const { code } = buildLibrary(dir);
      expect(code).toContain(
        'local f, x, y\ndo -- includes/a\n\n\nlocal z\nfunction f() return z end\nlocal function g() end\n\nend\n',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has the Lua lint report a name another file uses that its include does not export', () => {
    const lint = (dir: string) =>
      spawnSync('node', ['--import', 'tsx', 'scripts/lint-lua.mjs', dir], {
        cwd: join(import.meta.dirname, '../..'),
        encoding: 'utf8',
      });
    const greet = (exports: string) =>
      `${inc('common')}--- @export ${exports}\nlocal function helper() return 1 end\nlocal function greet() return helper() end\n`;
    const dir = folder({
      'includes/common': common,
      'includes/greet': greet('greet'),
      submit: `${inc('greet')}return greet() + helper()\n`,
    });
    try {
      const refused = lint(dir);
      expect(refused.status).toBe(1);
      expect(refused.stdout).toMatch(
        /submit\.lua:2:\d+: \(W113\) accessing undefined variable 'helper' \(includes\/greet declares it but does not export it/,
      );
      writeFileSync(join(dir, 'includes/greet.lua'), greet('greet, helper'));
      expect(lint(dir).stdout).not.toMatch(/helper|W113/);
      expect(readFileSync(join(dir, 'submit.lua'), 'utf8')).toContain('helper()');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a Lua file in place of the generated wire include', () => {
    const dir = folder({ 'includes/common': '', 'includes/wire': 'local TAKEN_WIDTH = 4\n', submit: '' });
    try {
      expect(() => buildLibrary(dir)).toThrow(/generated from src\/redis\/wire\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

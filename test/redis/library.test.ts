/** The scripts as one Redis function library: loaded on demand, and no call sees the last one's state. */
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildLibrary, libraryParts } from '../../src/redis/scripts.js';
import { closeAll, openQueue, rawClient, uniqueQueue } from '../helpers/setup.js';
import { parseEntry } from '../../src/queue/events.js';

afterEach(closeAll);

describe('the function library', () => {
  it('is loaded again when the server lost it, and the call goes through', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const r = rawClient();
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

  it('starts every call afresh: one call\'s state changes and counts are not carried into the next', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const r = rawClient();
    try {
      await q.submit({ id: 'a', task: 't' });
      await q.submit({ id: 'b', task: 't', group: 'g2' });
      const entries = (await r.xrange(`{rota:${name}}:events`, '-', '+')) as Array<[string, string[]]>;
      const waiting = entries.map(([id, fields]) => parseEntry(id, fields).filter((e) => e.state === 'waiting').map((e) => e.id));
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
        const prefix = `{rota:${uniqueQueue()}}:`;
        const [jobs] = (await r.call('FCALL', l.functions.get('take')!, 1, `${prefix}rotation`, prefix, 100, 'w', 1, 2, 1, 1000)) as [unknown[]];
        expect(jobs).toEqual([]);
      }
    } finally {
      await r.call('FUNCTION', 'DELETE', buildLibrary(copy).name).catch(() => undefined);
      r.disconnect();
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('holds each include once, after the includes it names, and refuses a cycle or an include it does not have', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-lua-'));
    const write = (name: string, ...includes: string[]) =>
      writeFileSync(join(dir, `${name}.lua`), includes.map((i) => `--- @include "includes/${i}"\n`).join('') + `-- ${name}\n`);
    try {
      mkdirSync(join(dir, 'includes'));
      write('includes/common');
      write('includes/a', 'b', 'common');
      write('includes/b', 'c');
      write('includes/c', 'common');
      write('submit', 'a');
      write('take', 'c', 'b');
      expect(libraryParts(dir).includes.map(([name]) => name)).toEqual(['includes/common', 'includes/c', 'includes/b', 'includes/a']);
      write('includes/c', 'a');
      expect(() => libraryParts(dir)).toThrow(/cycle/);
      write('includes/c', 'd');
      expect(() => libraryParts(dir)).toThrow(/includes\/c includes "includes\/d"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * What the docs state of the code is what the code builds: the function library's size
 * (docs/architecture.md), where the RotaErrors live (docs/architecture.md), the ACL lines
 * (docs/operations.md, made by src/redis/acl.ts) and where README sends a reader for figures.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { aclLines } from '../../src/redis/acl.js';
import { rotaLibrary } from '../../src/redis/library.js';

const ROOT = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
/** The files of a folder (recursively) whose names end with `ext`, as [path from the root, text]. */
const files = (dir: string, ext: string): Array<[string, string]> =>
  (readdirSync(new URL(dir, ROOT), { recursive: true }) as string[])
    .filter((f) => f.endsWith(ext))
    .map((f) => [`${dir}/${f}`, read(`${dir}/${f}`)]);

describe('the docs', () => {
  it("give the function library's size within 10 %, and it is about the size of lua/", () => {
    const doc = read('docs/architecture.md');
    const m = /library is thus about the size of `lua\/`\s+\(some (\d+) KB/.exec(doc);
    expect(m, 'architecture.md states the size of the library').not.toBeNull();
    const kb = Buffer.byteLength(rotaLibrary().code) / 1000;
    expect(Math.abs(Number(m![1]) - kb) / kb, `the library is ${kb.toFixed(0)} KB`).toBeLessThan(0.1);
    const lua = files('lua', '.lua').reduce((n, [, text]) => n + Buffer.byteLength(text), 0) / 1000;
    expect(Math.abs(lua - kb) / kb).toBeLessThan(0.1);
  });

  it('name the file of every RotaError that is not in src/errors.ts', () => {
    // (every class, with its parent and file: the RotaErrors are those that descend from RotaError)
    const classes = new Map<string, { parent: string; file: string }>();
    for (const [file, text] of files('src', '.ts')) {
      for (const c of text.matchAll(/\bclass (\w+) extends (\w+)/g)) classes.set(c[1], { parent: c[2], file });
    }
    const isRota = (name: string): boolean => name === 'RotaError' || (classes.has(name) && isRota(classes.get(name)!.parent));
    const elsewhere = [...classes]
      .filter(([name, c]) => name !== 'RotaError' && isRota(name) && c.file !== 'src/errors.ts')
      .map(([name, c]) => [name, c.file]);
    expect(elsewhere.length).toBeGreaterThan(0);
    const doc = read('docs/architecture.md');
    const said = /`src\/errors\.ts` holds[^\n]*(?:\n[^\n]+)*/.exec(doc)?.[0] ?? '';
    expect(said, 'architecture.md says what src/errors.ts holds').not.toBe('');
    expect(elsewhere.filter(([name, file]) => !said.includes(`\`${name}\``) || !said.includes(file))).toEqual([]);
  });

  it('give the ACL lines src/redis/acl.ts makes (with WAIT and CLUSTER KEYSLOT)', () => {
    const lines = read('docs/operations.md')
      .split('\n')
      .filter((l) => l.startsWith('ACL SETUSER '));
    expect(lines).toEqual(aclLines());
    expect(lines[1].split(' ')).toEqual(expect.arrayContaining(['+wait', '+cluster|keyslot']));
  });

  it("send README's reader to the benchmark report for figures", () => {
    const performance = /## Performance\n([\s\S]*?)\n## /.exec(read('README.md'))?.[1] ?? '';
    expect(performance).toContain('](benchmarks/results/REPORT.md)');
    // (no table of figures of its own: they are the report's)
    expect(performance).not.toMatch(/^\|/m);
  });
});

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

  it('say src/errors.ts holds every RotaError, as test/structure/errors.test.ts checks', () => {
    const row = read('docs/architecture.md')
      .split('\n')
      .find((l) => l.startsWith('| 0 |') && l.includes('`src/errors.ts`'));
    expect(row).toContain('every `RotaError`');
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

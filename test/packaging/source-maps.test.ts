/**
 * The package as `npm pack` makes it: no source map in it points at a file it does not ship (it
 * ships the compiled JavaScript and no TypeScript sources, so it ships no maps).
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { build, npm, stage } from '../helpers/package.js';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('holds no source map whose sources it lacks', async () => {
    const dist = await build();
    made.push(dist);
    const pkg = stage(dist);
    made.push(pkg);
    // (the files `npm pack` would put in the tarball, as it lists them)
    const [report] = JSON.parse((await npm(['pack', '--dry-run', '--json'], pkg)).stdout) as Array<{
      files: Array<{ path: string }>;
    }>;
    const packed = new Set(report.files.map((f) => f.path));
    expect(packed.has('dist/src/index.js')).toBe(true);
    const broken: string[] = [];
    for (const file of packed) {
      if (!file.endsWith('.map')) continue;
      const map = JSON.parse(readFileSync(join(pkg, file), 'utf8')) as { sources: string[] };
      for (const source of map.sources) {
        const target = join(dirname(file), source);
        if (!packed.has(target) || !existsSync(join(pkg, target))) broken.push(`${file} -> ${target}`);
      }
    }
    expect(broken).toEqual([]);
    // (nor does any compiled file name a map the package lacks)
    const js = (readdirSync(join(pkg, 'dist/src'), { recursive: true }) as string[]).filter((f) => f.endsWith('.js'));
    const pointing = js.filter((f) => {
      const m = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(pkg, 'dist/src', f), 'utf8'));
      return m !== null && !packed.has(join('dist/src', dirname(f), m[1]));
    });
    expect(pointing).toEqual([]);
  }, 180_000);
});

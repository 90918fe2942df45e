/**
 * Lint places every file of src/ in a layer: each is matched by exactly one of the layer
 * overrides in biome.jsonc (those that restrict imports, one per layer's folders or root files),
 * so a new folder or root file cannot escape the layer rule (docs/architecture.md, Layers).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

interface Override {
  includes: string[];
  linter?: { rules?: { style?: { noRestrictedImports?: unknown } } };
}

/** The globs of biome.jsonc's layer overrides, one list per override. */
function layerGlobs(): string[][] {
  // (JSONC: its comments are whole lines)
  const text = readFileSync(join(ROOT, 'biome.jsonc'), 'utf8')
    .split('\n')
    .filter((l) => !l.trim().startsWith('//'))
    .join('\n');
  const config = JSON.parse(text) as { overrides: Override[] };
  return config.overrides.filter((o) => o.linter?.rules?.style?.noRestrictedImports).map((o) => o.includes);
}

/** A Biome glob as a regular expression: `**` any folders, `*` any part of a name. */
function globRegExp(glob: string): RegExp {
  const re = glob
    .split('**')
    .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
    .join('.*');
  return new RegExp(`^${re}$`);
}

describe('layers', () => {
  it('places every file of src/ in exactly one layer', () => {
    const layers = layerGlobs().map((globs) => globs.map(globRegExp));
    expect(layers.length).toBeGreaterThanOrEqual(10);
    const files = (readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
      .filter((d) => d.isFile())
      .map((d) => join(d.parentPath, d.name).slice(ROOT.length + 1));
    expect(files.length).toBeGreaterThan(100);
    const misplaced = files
      .map((f) => ({ f, n: layers.filter((globs) => globs.some((re) => re.test(f))).length }))
      .filter(({ n }) => n !== 1)
      .map(({ f, n }) => `${f}: in ${n} layers`);
    expect(misplaced).toEqual([]);
  });
});

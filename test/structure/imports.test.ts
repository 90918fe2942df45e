/**
 * The layers of src/: src/redis/ (keys, scripts, stores, wire formats) is what the other modules
 * are built on and imports none of them; the modules of src/queue/ and src/redis/ import each
 * other in no cycle.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** The modules src/redis/ must not import. */
const ABOVE = ['src/queue/', 'src/periodic/', 'src/executor/', 'src/observability/', 'src/dashboard/', 'src/cli/'];

/** Imports allowed for now, as `importer -> imported`, each with why; a stale entry fails the test. */
const ALLOWED: Record<string, string> = {
  // TODO(periodic helper, issue 45): the periodic keys move into src/redis/keys.ts; remove this entry after that merge.
  'src/redis/periodic-store.ts -> src/periodic/keys.ts': 'the periodic key builders, moving to src/redis/keys.ts',
};

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

const rel = (path: string) => relative(ROOT, path).split('\\').join('/');

/** The modules of src/ a file imports (type imports and re-exports included), as paths from the root. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'/gms)) {
    out.push(rel(resolve(dirname(file), m[1].replace(/\.js$/, '.ts'))));
  }
  return out;
}

describe('imports', () => {
  it('src/redis/ imports none of the modules built on it', () => {
    const found: string[] = [];
    for (const file of sourceFiles(join(ROOT, 'src/redis'))) {
      for (const dep of importsOf(file)) if (ABOVE.some((a) => dep.startsWith(a))) found.push(`${rel(file)} -> ${dep}`);
    }
    expect(found.filter((f) => !(f in ALLOWED))).toEqual([]);
    for (const entry of Object.keys(ALLOWED)) {
      const [importer] = entry.split(' -> ');
      if (existsSync(join(ROOT, importer))) expect(found, `${entry} is allowed but not made`).toContain(entry);
    }
  });

  it('src/queue/ and src/redis/ import each other in no cycle', () => {
    const files = [...sourceFiles(join(ROOT, 'src/queue')), ...sourceFiles(join(ROOT, 'src/redis'))];
    const graph = new Map(files.map((f) => [rel(f), importsOf(f)]));
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (node: string) => {
      state.set(node, 'open');
      path.push(node);
      for (const dep of graph.get(node) ?? []) {
        if (!graph.has(dep)) continue;
        if (state.get(dep) === 'open') cycles.push([...path.slice(path.indexOf(dep)), dep].join(' -> '));
        else if (!state.has(dep)) visit(dep);
      }
      path.pop();
      state.set(node, 'done');
    };
    for (const node of graph.keys()) if (!state.has(node)) visit(node);
    expect(cycles).toEqual([]);
  });
});

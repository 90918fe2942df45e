/**
 * Issue 45, item 2 (periodic side): the periodic key names are built only in src/redis/ (keys.ts,
 * and the stores that read and write them); no other source file spells a `p:*` key.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The code of a TypeScript file without its comments (a `//` inside a string ends the line early: harmless here). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
}

describe('periodic keys', () => {
  it('no source file outside src/redis/ builds a p:* key name', () => {
    const offenders: string[] = [];
    for (const file of sources(SRC)) {
      const path = relative(SRC, file);
      if (path.startsWith('redis/')) continue;
      code(readFileSync(file, 'utf8'))
        .split('\n')
        .forEach((line, i) => {
          // a string or template part beginning with `p:` and a key name, e.g. 'p:ev:' or `${prefix}p:nextrun`
          if (/(['"`}])p:[a-z]/.test(line)) offenders.push(`${path}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offenders).toEqual([]);
  });
});

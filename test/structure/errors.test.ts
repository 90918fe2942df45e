/**
 * Every error class Rota throws on purpose is a RotaError, and all of them are in src/errors.ts
 * (docs/architecture.md says so): a caller catches `RotaError` for all of them and finds each in
 * one file, and imports each from the package to test for it. The CLI's own errors (src/cli/, src/bench/, src/dev/: exit codes, refusals) and an
 * aborted run's signal reason (an `AbortError`, as DOM's) are the exceptions.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as errors from '../../src/errors.js';
import * as rota from '../../src/index.js';

const ROOT = join(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const OWN_ERRORS = /^src\/(cli|bench|dev|demo)\//;
/** Classes that extend an error outside src/errors.ts on purpose, and why. */
/** Classes of src/errors.ts the package does not export, and why a caller never meets them. */
const INTERNAL: Record<string, string> = {
  MigrationPathError: 'thrown by `rota migrate` only: the migration runner is not in the public API',
};
const ALLOWED: Record<string, string> = {
  'src/executor/run.ts RunAborted': "the reason of an aborted run's signal: an AbortError, as DOM's",
};

describe('errors', () => {
  it('declares every error class of the library in src/errors.ts', () => {
    const found: string[] = [];
    for (const f of readdirSync(SRC, { recursive: true }) as string[]) {
      if (!f.endsWith('.ts')) continue;
      const file = relative(ROOT, join(SRC, f));
      if (file === 'src/errors.ts' || OWN_ERRORS.test(file)) continue;
      for (const m of readFileSync(join(SRC, f), 'utf8').matchAll(/class (\w+) extends (\w*Error)\b/g)) {
        if (!ALLOWED[`${file} ${m[1]}`]) found.push(`${file}: ${m[1]} extends ${m[2]}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('makes each of them a RotaError', () => {
    const classes = Object.entries(errors).filter(([, v]) => typeof v === 'function');
    expect(classes.length).toBeGreaterThan(20);
    for (const [name, cls] of classes)
      expect(cls.prototype instanceof errors.RotaError || cls === errors.RotaError, name).toBe(true);
    const lost = new errors.LeaseLostError('j1');
    expect(lost).toBeInstanceOf(errors.RotaError);
    expect(lost.name).toBe('LeaseLostError');
  });

  it('exports each of them from the package, so a caller can test for it', () => {
    const missing = Object.entries(errors)
      .filter(([name, v]) => typeof v === 'function' && !INTERNAL[name])
      .filter(([name, v]) => (rota as Record<string, unknown>)[name] !== v)
      .map(([name]) => name);
    expect(missing).toEqual([]);
  });
});

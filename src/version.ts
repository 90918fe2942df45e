/** Rota's own version, as its package.json gives it (read once, found from src/ or dist/src/). */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** The version in Rota's package.json ('unknown' when the file cannot be found). */
export function rotaVersion(): string {
  if (cached !== undefined) return cached;
  cached = 'unknown';
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 4; up++, dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'rota' && pkg.version) {
        cached = pkg.version;
        break;
      }
    } catch {
      // not here: look one folder up
    }
  }
  return cached;
}

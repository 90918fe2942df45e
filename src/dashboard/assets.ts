/**
 * The dashboard's static files, served from the package (no CDN at run time): the page script
 * and style sheet of ./assets/, and uPlot's script and style sheet from its package.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder of client.js and style.css: ./assets beside this module, or src/dashboard/assets of the package (built code). */
function assetsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  if (existsSync(join(dir, 'assets', 'client.js'))) return join(dir, 'assets');
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'src', 'dashboard', 'assets');
    if (existsSync(join(candidate, 'client.js'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error('cannot find the dashboard assets of the rota package');
}

const require = createRequire(import.meta.url);
const uplot = dirname(require.resolve('uplot'));

const FILES = new Map<string, { file: () => string; type: string }>(
  Object.entries({
    'client.js': { file: () => join(assetsDir(), 'client.js'), type: 'text/javascript; charset=utf-8' },
    'style.css': { file: () => join(assetsDir(), 'style.css'), type: 'text/css; charset=utf-8' },
    'uPlot.iife.min.js': { file: () => join(uplot, 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
    'uPlot.min.css': { file: () => join(uplot, 'uPlot.min.css'), type: 'text/css; charset=utf-8' },
  }),
);

const cache = new Map<string, { body: Buffer; type: string }>();

/** An asset by file name, or undefined (looked up by own name only: `constructor` is none). */
export function asset(name: string): { body: Buffer; type: string } | undefined {
  const f = FILES.get(name);
  if (!f) return undefined;
  let a = cache.get(name);
  if (!a) {
    a = { body: readFileSync(f.file()), type: f.type };
    cache.set(name, a);
  }
  return a;
}

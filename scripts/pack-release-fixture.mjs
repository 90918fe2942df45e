/**
 * Packs the package as it is released, for the upgrade test (test/upgrade/rolling.test.ts): a
 * clean build (`dist/` removed and rebuilt), `npm pack`, and the tarball moved to
 * `test/fixtures/releases/rota-<version>.tgz`. Run it on the release's commit, after its version
 * bump (`npm run pack:release`); commit the tarball with it. The upgrade test runs the newest
 * tarball of that folder against the sources.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { name, version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const releases = join(root, 'test/fixtures/releases');
/** A tarball larger than this holds something that is not the package (a stray build output); 1.0 packs to some 600 KB. */
const MAX_BYTES = 1024 * 1024;

// (a clean build: a file left in dist/ by a source since removed would be packed too)
rmSync(join(root, 'dist'), { recursive: true, force: true });
execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
const out = mkdtempSync(join(tmpdir(), 'rota-pack-'));
try {
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: root, encoding: 'utf8' }),
  );
  const bytes = statSync(join(out, packed.filename)).size;
  if (bytes > MAX_BYTES) throw new Error(`${packed.filename} is ${bytes} bytes, more than ${MAX_BYTES}: check what it holds`);
  mkdirSync(releases, { recursive: true });
  const target = join(releases, `${name}-${version}.tgz`);
  copyFileSync(join(out, packed.filename), target);
  process.stdout.write(`${target}: ${packed.entryCount} files, ${bytes} bytes\n`);
} finally {
  rmSync(out, { recursive: true, force: true });
}

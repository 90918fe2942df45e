/**
 * The package as `npm pack` makes it: what it holds (the build, the CommonJS entry and its types,
 * the Lua scripts, the dashboard's assets, the licence), what it must not (tests, fixtures,
 * benchmarks, TypeScript sources, a source map whose sources it lacks), a dry run of `npm publish`
 * without warnings, and its tarball, unpacked as an install would be with the checkout's
 * node_modules for its dependencies: `rota --version` runs from its bin, and require('rota') and
 * import 'rota' load the one module.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build, npm, PACKAGE, ROOT, run, stage, tempDir } from '../helpers/package.js';

/** The files under `dir` of the checkout, as paths from its root. */
function filesUnder(dir: string): string[] {
  return (readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(ROOT.length + 1));
}

describe('the packed package', () => {
  const made: string[] = [];
  /** The staged package folder (what `npm pack` read). */
  let pkg: string;
  /** The paths in the tarball, as `npm pack --json` lists them. */
  let packed: Set<string>;
  /** A project with the tarball unpacked at node_modules/rota. */
  let project: string;

  beforeAll(async () => {
    const dist = await build();
    pkg = stage(dist);
    made.push(pkg);
    project = tempDir('contents');
    made.push(project);
    const [report] = JSON.parse((await npm(['pack', '--json', '--pack-destination', project], pkg)).stdout) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    packed = new Set(report.files.map((f) => f.path));
    // Unpacked where an install puts it, its dependencies linked from the checkout; then npm links
    // its bin (node_modules/.bin/rota, made executable) as an install does.
    const modules = join(project, 'node_modules');
    mkdirSync(modules);
    await run('tar', ['-xzf', join(project, report.filename), '-C', modules]);
    renameSync(join(modules, 'package'), join(modules, PACKAGE.name));
    for (const dep of Object.keys(PACKAGE.dependencies)) {
      mkdirSync(dirname(join(modules, dep)), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', dep), join(modules, dep));
    }
    await npm(['rebuild', PACKAGE.name, '--ignore-scripts'], project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'commonjs' }));
  }, 180_000);

  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });

  it('holds the build, both entry points with their types, the Lua scripts, the dashboard assets and the licence', () => {
    const entries = [PACKAGE.main, PACKAGE.types, ...Object.values(PACKAGE.bin)];
    for (const condition of Object.values(PACKAGE.exports['.'])) entries.push(...Object.values(condition));
    const wanted = [
      'LICENSE',
      'README.md',
      'package.json',
      ...entries.map((p) => p.replace(/^\.\//, '')),
      ...filesUnder('lua'),
      ...filesUnder('src/dashboard/assets'),
    ];
    expect(wanted).toContain('cjs/index.d.cts');
    expect(wanted.filter((f) => !packed.has(f))).toEqual([]);
  });

  it('holds nothing but what `files` lists: no tests, fixtures, benchmarks or TypeScript sources', () => {
    const listed = (f: string) => PACKAGE.files.some((entry) => f === entry || f.startsWith(`${entry}/`));
    const stray = [...packed].filter((f) => !['LICENSE', 'README.md', 'package.json'].includes(f) && !listed(f));
    expect(stray).toEqual([]);
    const unwanted = [...packed].filter(
      (f) =>
        /(^|\/)(test|tests|__tests__|fixtures|benchmarks)\//.test(f) ||
        /\.(test|spec)\.[cm]?[jt]s$/.test(f) ||
        (/\.[cm]?ts$/.test(f) && !/\.d\.[cm]?ts$/.test(f)) ||
        /(^|\/)tsconfig[^/]*\.json$/.test(f),
    );
    expect(unwanted).toEqual([]);
  });

  it('holds no source map whose sources it lacks, nor a compiled file naming a map it lacks', () => {
    // (the build writes no maps: the package ships no TypeScript sources for them to point at)
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
    const pointing = [...packed].filter((f) => {
      if (!/\.(c|m)?js$|\.d\.[cm]?ts$/.test(f)) return false;
      const m = /\/\/# source(?:Mapping)?URL=(\S+)\s*$/.exec(readFileSync(join(pkg, f), 'utf8'));
      return m !== null && !packed.has(join(dirname(f), m[1]));
    });
    expect(pointing).toEqual([]);
  });

  it('publishes (a dry run) without a warning: none about package.json, which npm would correct', async () => {
    const { stderr } = await npm(['publish', '--dry-run'], pkg);
    // (but that no one is logged in: a dry run needs no login)
    const warnings = stderr.split('\n').filter((l) => l.startsWith('npm warn') && !l.includes('requires you to be logged in'));
    expect(warnings).toEqual([]);
  });

  it('runs `rota --version` from its bin', async () => {
    const { stdout } = await run(join(project, 'node_modules/.bin/rota'), ['--version'], { cwd: project });
    expect(stdout.trim()).toBe(PACKAGE.version);
  });

  it('loads by require() and by import, the same module either way', async () => {
    // (from CommonJS, then from an ES module; each loads it the other way too and compares)
    const compare = `JSON.stringify({
      names: Object.keys(r).sort().join() === Object.keys(m).sort().join(),
      same: r.Queue === m.Queue && r.RotaError === m.RotaError,
      kinds: ['Queue', 'Worker', 'Scheduler', 'PeriodicTasks', 'dashboard', 'parseTimer'].map((k) => typeof r[k]),
    })`;
    writeFileSync(
      join(project, 'load.cjs'),
      `const r = require('rota');\nimport('rota').then((m) => console.log(${compare}));\n`,
    );
    writeFileSync(
      join(project, 'load.mjs'),
      `import * as m from 'rota';\nimport { createRequire } from 'node:module';\nconst r = createRequire(import.meta.url)('rota');\nconsole.log(${compare});\n`,
    );
    const want = { names: true, same: true, kinds: Array(6).fill('function') };
    for (const file of ['load.cjs', 'load.mjs']) {
      const { stdout, stderr } = await run(process.execPath, [file], { cwd: project });
      expect(JSON.parse(stdout), file).toEqual(want);
      expect(stderr, file).toBe('');
    }
  });
});

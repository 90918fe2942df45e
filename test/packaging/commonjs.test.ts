/**
 * Rota from CommonJS: the packed package (`npm pack` of the built sources) installed into a new
 * `npm init -y` project of type commonjs, where `require('rota')` gives its exports (require(esm),
 * Node >= 20.19), a `.cts` file importing it typechecks under `module: nodenext` and runs, and
 * with require(esm) turned off (as on an older Node) the error names the fix.
 */
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build, npm, PACKAGE, ROOT, run, stage, tempDir } from '../helpers/package.js';

describe('rota from a CommonJS project', () => {
  const made: string[] = [];
  let project: string;

  beforeAll(async () => {
    const dist = build();
    project = tempDir('cjs');
    made.push(project);
    const pkg = stage(await dist);
    made.push(pkg);
    await npm(['pack', '--pack-destination', project], pkg);
    await npm(['init', '-y'], project);
    await npm(['pkg', 'set', 'type=commonjs'], project);
    await npm(['install', `./${PACKAGE.name}-${PACKAGE.version}.tgz`], project);
  }, 300_000);

  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });

  it('require("rota") gives the exports, Queue and Worker among them', async () => {
    const { stdout, stderr } = await run(
      process.execPath,
      ['-e', "const r = require('rota'); console.log(JSON.stringify({ Queue: typeof r.Queue, Worker: typeof r.Worker }))"],
      { cwd: project },
    );
    expect(JSON.parse(stdout)).toEqual({ Queue: 'function', Worker: 'function' });
    // (no experimental warning either: the require(esm) happens inside node_modules)
    expect(stderr).toBe('');
  });

  it('a .cts file importing rota typechecks under module nodenext, and runs', async () => {
    writeFileSync(
      join(project, 'index.cts'),
      "import { Queue, Worker } from 'rota';\nconsole.log(typeof Queue, typeof Worker);\n",
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          target: 'es2022',
          strict: true,
          skipLibCheck: true,
          typeRoots: [join(ROOT, 'node_modules/@types')],
          types: ['node'],
          outDir: 'out',
        },
        files: ['index.cts'],
      }),
    );
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: project });
    const { stdout } = await run(process.execPath, ['out/index.cjs'], { cwd: project });
    expect(stdout.trim()).toBe('function function');
  });

  it('rota bench --compare names a peer that is not installed (they are optional peer dependencies)', async () => {
    const failed = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(project, 'node_modules/rota/dist/src/cli/main.js'), 'bench', '--compare', 'bullmq'],
        { cwd: project },
        (err, _out, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    expect(failed).toEqual({
      code: 1,
      stderr: 'rota: --compare bullmq: the package "bullmq" is not installed (npm install bullmq, beside rota)\n',
    });
  });

  it('names the fix where require() cannot load ES modules', async () => {
    const failed = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--no-experimental-require-module', '-e', "require('rota')"],
        { cwd: project },
        (err, _out, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain('Node >= 20.19');
    expect(failed.stderr).toContain("import('rota')");
  });
});

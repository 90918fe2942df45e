/**
 * The image's runtime stage, without a Docker engine: the test reads the Dockerfile, lays out a
 * temporary folder as the runtime stage's COPY lines say (from the checkout, or from the build
 * stage's compiled sources), installs the production dependencies there with `npm ci --omit=dev`
 * as its RUN line does, then runs `rota dashboard` (its pages and assets load) and `rota worker`
 * (it registers, runs a job of the default tasks file, and exits 0 on SIGTERM) from that folder.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { servedPage } from '../helpers/cli.js';
import { build, npm, PACKAGE, ROOT, run, tempDir } from '../helpers/package.js';
import { freePort } from '../helpers/redis-server.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

/** One instruction of a Dockerfile stage. */
type Instruction = { op: string; flags: Record<string, string>; args: string[]; raw: string };

/** A stage: its name (`AS`), its working directory, and its instructions. */
interface Stage {
  name?: string;
  workdir: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages (continuation lines joined, comments dropped; JSON or shell form). */
function stages(text: string): Stage[] {
  const out: Stage[] = [];
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  for (const line of lines) {
    const [, op, rest] = /^(\S+)\s*(.*)$/.exec(line)!;
    const words = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
    const flags: Record<string, string> = {};
    while (words[0]?.startsWith('--')) {
      const [k, v = ''] = words.shift()!.slice(2).split('=');
      flags[k] = v;
    }
    const upper = op.toUpperCase();
    if (upper === 'FROM') {
      out.push({ name: /\bAS\s+(\S+)/i.exec(rest)?.[1], workdir: '/', instructions: [] });
      continue;
    }
    const stage = out.at(-1)!;
    if (upper === 'WORKDIR') stage.workdir = posix.resolve(stage.workdir, words[0]);
    stage.instructions.push({ op: upper, flags, args: words, raw: rest });
  }
  return out;
}

/** Whether .dockerignore keeps `path` (relative to the context) out of the build context. */
function ignored(path: string): boolean {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const clean = posix.normalize(path).replace(/^\.\//, '').replace(/\/$/, '');
  return patterns.some((p) => clean === p || clean.startsWith(`${p}/`));
}

/**
 * Lays out the runtime stage (the last one) in `root`, which stands for its WORKDIR: COPY from
 * the context (the checkout, less what .dockerignore keeps out) or from the build stage (its
 * `dist` is `dist`, the compiled sources; the rest of it came from the context), and the
 * `npm ci --omit=dev` of its RUN line. Its other RUN lines (a link, file modes) are not needed to
 * run it with node. Answers the runtime stage.
 */
async function layOut(all: Stage[], dist: string, root: string): Promise<Stage> {
  const runtime = all.at(-1)!;
  const inRoot = (p: string) => join(root, posix.relative(runtime.workdir, posix.resolve(runtime.workdir, p)));
  for (const i of runtime.instructions) {
    if (i.op === 'COPY') {
      const dest = i.args.at(-1)!;
      const sources = i.args.slice(0, -1);
      for (const source of sources) {
        let from: string;
        if (i.flags.from) {
          const stage = all.find((s) => s.name === i.flags.from);
          expect(stage, `COPY --from=${i.flags.from}: no such stage`).toBeDefined();
          const rel = posix.relative(stage!.workdir, posix.resolve(stage!.workdir, source));
          from = rel === 'dist' || rel.startsWith('dist/') ? join(dist, rel.slice(5)) : join(ROOT, rel);
        } else {
          expect(ignored(source), `COPY ${source}: .dockerignore keeps it out of the context`).toBe(false);
          from = join(ROOT, source);
        }
        expect(existsSync(from), `COPY ${source}: not found`).toBe(true);
        // (a folder's contents go into dest; a file goes into dest/ when dest is a folder)
        const target =
          !statSync(from).isDirectory() && (dest.endsWith('/') || sources.length > 1)
            ? join(inRoot(dest), basename(source))
            : inRoot(dest);
        mkdirSync(join(target, '..'), { recursive: true });
        cpSync(from, target, { recursive: true });
      }
    } else if (i.op === 'RUN' && /\bnpm ci\b/.test(i.raw)) {
      expect(i.raw).toContain('--omit=dev');
      await npm(['ci', '--omit=dev'], root);
    }
  }
  return runtime;
}

/** A process started from the layout, with what it printed. */
function start(
  root: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const bin = join(root, PACKAGE.bin.rota);
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
  let text = '';
  child.stdout!.on('data', (c) => {
    text += c;
  });
  child.stderr!.on('data', (c) => {
    text += c;
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, output: () => text, exited };
}

describe('the image’s runtime stage, laid out from the Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const made: string[] = [];
  let root: string;
  let runtime: Stage;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const dist = await build();
    const app = tempDir('image');
    made.push(app);
    root = join(app, 'app');
    mkdirSync(root);
    runtime = await layOut(stages(dockerfile), dist, root);
    env = { REDIS_URL: redisUrl() };
    for (const i of runtime.instructions.filter((x) => x.op === 'ENV')) {
      const [k, v] = i.raw.split('=');
      env[k] = v;
    }
  }, 300_000);

  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });

  it('holds everything package.json’s files lists', () => {
    for (const entry of PACKAGE.files) expect(existsSync(join(root, entry)), entry).toBe(true);
  });

  it('serves the dashboard with its assets', async () => {
    const port = await freePort();
    const p = start(root, ['dashboard', '--port', String(port), '--queue', uniqueQueue('image')], env);
    try {
      const page = await servedPage(port).catch((err) => {
        throw new Error(`${err}\n${p.output()}`);
      });
      expect(page).toContain('<meta name="csrf"');
      for (const name of ['style.css', 'client.js', 'uPlot.iife.min.js', 'uPlot.min.css']) {
        const r = await fetch(`http://127.0.0.1:${port}/assets/${name}`);
        expect(r.status, `${name}: ${await r.clone().text()}`).toBe(200);
        await r.arrayBuffer();
      }
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });

  it('runs the worker of its CMD: it registers, its HEALTHCHECK passes, it runs a job, and it exits 0 on SIGTERM', async () => {
    const name = uniqueQueue('image');
    const cmd = runtime.instructions
      .find((i) => i.op === 'CMD')!
      .args.map((a) => (a.startsWith(`${runtime.workdir}/`) ? join(root, a.slice(runtime.workdir.length)) : a));
    expect(cmd[0]).toBe('worker');
    // (the health port the image's command and HEALTHCHECK share, moved to a free one here)
    const imagePort = cmd[cmd.indexOf('--health-port') + 1];
    expect(imagePort).toMatch(/^\d+$/);
    const port = String(await freePort());
    cmd[cmd.indexOf('--health-port') + 1] = port;
    const check = runtime.instructions.find((i) => i.op === 'HEALTHCHECK')!;
    const probe = (JSON.parse(check.raw.slice(check.raw.indexOf('['))) as string[]).map((a) =>
      a.replaceAll(`:${imagePort}/`, `:${port}/`),
    );
    expect(probe[0]).toBe('node');
    const p = start(root, [...cmd, '--queue', name], env);
    const queue = new Queue(name, { connection: redisUrl() });
    try {
      await eventually(async () => {
        const listed = await run(process.execPath, [join(root, PACKAGE.bin.rota), 'workers', '--json', '--queue', name], {
          cwd: root,
          env: { ...process.env, ...env },
        });
        return listed.stdout.trim() !== '';
      }, 30_000).catch((err) => {
        throw new Error(`${err}\n${p.output()}`);
      });
      // the HEALTHCHECK's command, as Docker runs it in the container, answers 0 once it is ready
      await eventually(
        () =>
          run(process.execPath, probe.slice(1), { cwd: root, env: process.env }).then(
            () => true,
            () => false,
          ),
        30_000,
      );
      const job = await queue.submit({ task: 'send', args: { to: 'someone' } });
      const done = await eventually(async () => {
        const j = await queue.getJob(job.id);
        return j?.state === 'success' ? j : undefined;
      }, 30_000);
      expect(done.result).toEqual({ sent: true });
      p.child.kill('SIGTERM');
      expect(await p.exited, p.output()).toBe(0);
    } finally {
      p.child.kill('SIGKILL');
      await queue.close();
    }
  });
});

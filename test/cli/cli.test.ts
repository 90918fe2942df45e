/** The `rota` CLI, run from source, against the test Redis: output and exit codes, errors included. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { BIN, rota } from '../helpers/cli.js';
import { NodeProcess } from '../helpers/processes.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('rota CLI', () => {
  it('submits, lists, shows, cancels and retries jobs', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('cli')];
    const sub = await rota([...q, 'submit', 'send', '--group', 'acme', '--args', '{"to":"a@b.c"}', '--json']);
    expect(sub.code).toBe(0);
    const job = JSON.parse(sub.stdout);
    expect(job).toMatchObject({ task: 'send', group: 'acme', state: 'waiting', args: { to: 'a@b.c' } });

    const list = await rota([...q, 'jobs', '--state', 'waiting']);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID\s+TASK\s+GROUP\s+PRIO\s+STATE/);
    expect(list.stdout).toContain(job.id);

    const groups = await rota([...q, 'groups', '--json']);
    expect(JSON.parse(groups.stdout.trim())).toMatchObject({ group: 'acme', waiting: 1, running: 0, paused: false });

    const cancel = await rota([...q, 'cancel', job.id]);
    expect(cancel).toMatchObject({ code: 0, stdout: `${job.id} cancelled\n` });
    const again = await rota([...q, 'cancel', job.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already ended cancelled/);

    const retry = await rota([...q, 'retry', job.id]);
    expect(retry).toMatchObject({ code: 0, stdout: `${job.id} waiting\n` });
    const shown = await rota([...q, 'job', job.id, '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: job.id, state: 'waiting', retries: 0 });

    const stats = await rota([...q, 'stats', '--json']);
    expect(JSON.parse(stats.stdout).counts).toMatchObject({ waiting: 1, cancelled: 0 });
  });

  it('pauses and resumes groups and sets limits', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('cli')];
    expect((await rota([...q, 'pause-group', 'acme', '--create'])).code).toBe(0);
    expect((await rota([...q, 'group-limit', 'acme', '--concurrency', '3', '--weight', '2'])).code).toBe(0);
    let g = JSON.parse((await rota([...q, 'groups', '--json'])).stdout.trim());
    expect(g).toMatchObject({ group: 'acme', paused: true, limit: 3, weight: 2 });
    expect((await rota([...q, 'resume-group', 'acme'])).code).toBe(0);
    g = JSON.parse((await rota([...q, 'groups', '--json'])).stdout.trim());
    expect(g.paused).toBe(false);
  });

  it('runs an executor from a tasks module and shuts it down on SIGTERM', async () => {
    const name = uniqueQueue('cli');
    const q = ['--redis', redisUrl(), '--queue', name];
    const dir = mkdtempSync(join(tmpdir(), 'rota-cli-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const tasks = join(dir, 'tasks.mjs');
    writeFileSync(
      tasks,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the string is JavaScript source holding a template literal.
      "export default { greet: async ({ args, log }) => { log('hello', args.name); return `hi ${args.name}`; } };\n",
    );
    const sub = await rota([...q, 'submit', 'greet', '--args', '{"name":"ada"}']);
    const id = sub.stdout.trim();
    const worker = new NodeProcess(BIN, [...q, 'worker', '--tasks', tasks, '--concurrency', '2']);
    try {
      const deadline = Date.now() + 20_000;
      let job: { state: string; result?: string } = { state: 'waiting' };
      while (job.state !== 'success' && Date.now() < deadline) {
        job = JSON.parse((await rota([...q, 'job', id, '--json'])).stdout);
        if (job.state !== 'success') await new Promise((r) => setTimeout(r, 100));
      }
      expect(job).toMatchObject({ state: 'success', result: 'hi ada', logs: [expect.stringMatching(/hello ada$/)] });
      const workers = await rota([...q, 'workers', '--json']);
      expect(JSON.parse(workers.stdout.trim())).toMatchObject({ pid: worker.pid, concurrency: 2 });
      worker.signal('SIGTERM');
      expect(await worker.exited).toBe(0);
      expect((await rota([...q, 'workers', '--json'])).stdout).toBe('');
    } finally {
      await worker.kill();
    }
  });

  it('says what is wrong, with exit codes that mean something', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('cli')];
    const badJson = await rota([...q, 'submit', 'x', '--args', '{bad']);
    expect(badJson.code).toBe(1);
    expect(badJson.stderr).toMatch(/--args must be JSON/);
    const badField = await rota([...q, 'submit', 'x', '--group', '']);
    expect(badField.code).toBe(1);
    expect(badField.stderr).toMatch(/group: must not be empty/);
    const missing = await rota([...q, 'job', 'no-such-job']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/no job "no-such-job"/);
    const unreachable = await rota(['--redis', 'redis://127.0.0.1:1', 'groups']);
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
    const unknown = await rota(['frobnicate']);
    expect(unknown.code).toBe(2);
    const badTasks = await rota([...q, 'worker', '--tasks', '/nonexistent/tasks.js']);
    expect(badTasks.code).toBe(1);
    expect(badTasks.stderr).toMatch(/cannot load tasks from \/nonexistent\/tasks\.js/);
  });

  it('runs the demo end to end in its short non-interactive mode', async () => {
    // 10 s: the demo's most widely spaced timer (`cleanup`, `*/7 * * * * *`) leaves up to 7 s
    // between occurrences, and the window begins only once its Redis and scheduler are up.
    const demo = await rota(['demo', '--duration', '10', '--flood', '600', '--json'], { REDIS_URL: '' });
    expect(demo.code, demo.stderr).toBe(0);
    const lines = demo.stdout.trim().split('\n');
    const summary = JSON.parse(lines[lines.length - 1]);
    const acme = summary.tenants.find((t: { group: string }) => t.group === 'acme');
    expect(acme).toMatchObject({ submitted: 600, done: 600 });
    const light = summary.tenants.filter((t: { group: string }) => t.group !== 'acme');
    expect(light.length).toBe(3);
    for (const t of light) expect(t.done).toBeGreaterThan(0);
    expect(Object.keys(summary.periodicRuns).sort()).toEqual(['cleanup', 'ping', 'report']);
  });
});

/**
 * `rota worker --tasks tasks.js` with isolated tasks: one marked in the tasks file (its
 * `isolate` export; a task made with isolated() is the API's, tested in test/queue/), one
 * isolated by `--isolate task=process`, with the pool flags; SIGTERM drains and ends the pools
 * as it closes the executor.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, rota } from '../helpers/cli.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, eventually, openQueue, redisUrl, uniqueQueue } from '../helpers/setup.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  await closeAll();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('rota worker with isolated tasks', () => {
  it('runs a task the tasks file marks isolated, and one --isolate names, recycled as the flags say', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-cli-iso-'));
    dirs.push(dir);
    const tasks = join(dir, 'tasks.mjs');
    writeFileSync(
      tasks,
      "import { isMainThread } from 'node:worker_threads';\n" +
        "export const isolate = { marked: { in: 'thread', max: 1 } };\n" +
        'export default {\n' +
        '  marked: () => ({ pid: process.pid, thread: !isMainThread }),\n' +
        '  heavy: () => ({ pid: process.pid }),\n' +
        '  plain: () => ({ pid: process.pid }),\n' +
        '};\n',
    );
    const name = uniqueQueue('cli-iso');
    const q = openQueue(name);
    const args = ['--redis', redisUrl(), '--queue', name, 'worker', '--tasks', tasks, '--concurrency', '2'];
    const bad = await rota([...args, '--isolate', 'nope=process']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--isolate nope=process: .*tasks\.mjs has no task "nope"/);
    expect((await rota([...args, '--isolate', 'heavy=fiber'])).stderr).toMatch(/--isolate takes task=thread or task=process/);
    expect((await rota([...args, '--isolate', 'marked=process'])).stderr).toMatch(
      /--isolate marked=process: task "marked" is isolated already/,
    );

    const worker = new NodeProcess(BIN, [...args, '--isolate', 'heavy=process', '--isolate-recycle-after', '1']);
    try {
      const jobs = await Promise.all(['heavy', 'heavy', 'marked', 'plain'].map((task) => q.submit({ task })));
      const results = await eventually(async () => {
        const js = await Promise.all(jobs.map((j) => q.getJob(j.id)));
        return js.every((j) => j?.state === 'success') && js.map((j) => j?.result as { pid: number; thread?: boolean });
      }, 60_000);
      const [h1, h2, marked, plain] = results;
      expect(plain.pid).toBe(worker.pid);
      expect(marked).toEqual({ pid: worker.pid, thread: true });
      // a process each: recycled after one job
      expect(h1.pid).not.toBe(worker.pid);
      expect(h2.pid).not.toBe(worker.pid);
      expect(h1.pid).not.toBe(h2.pid);
      worker.signal('SIGTERM');
      expect(await worker.exited).toBe(0);
      expect(alive(h1.pid) || alive(h2.pid)).toBe(false);
    } finally {
      await worker.kill();
    }
  });
});

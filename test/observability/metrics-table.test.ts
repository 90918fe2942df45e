/**
 * docs/metrics.md's table of every metric against what real `rota worker` and `rota scheduler`
 * processes serve on /metrics (with group labels on, so that every metric is there): the same
 * names, each of the type the table says, and every sample's labels those of its row.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { Queue } from '../../src/index.js';
import { cliEntry } from '../helpers/cli.js';
import { documentedMetrics, families, samples } from '../helpers/metrics-text.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

/** Spawns `rota ...args` and resolves the metrics URL it logs. */
async function serve(args: string[]): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, [...cliEntry(), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  open.push({
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return eventually(async () => /"url":"(http:\/\/[^"]+)","msg":"serving metrics"/.exec(out)?.[1], 30_000);
}

describe('the metrics table (docs/metrics.md)', () => {
  it('names every metric the executor and the scheduler serve, with its type and labels', async () => {
    const name = uniqueQueue('table');
    const dir = mkdtempSync(join(tmpdir(), 'rota-metrics-table-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const tasks = join(dir, 'tasks.mjs');
    writeFileSync(tasks, "export default { ok: async () => 'done' };\n");
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    const q = ['--redis', redisUrl(), '--queue', name];
    const flags = ['--metrics-port', '0', '--metrics-groups', 'all', '--metrics-sweep-interval', '1000'];
    const worker = await serve([...q, 'worker', '--tasks', tasks, ...flags]);
    const scheduler = await serve([...q, 'scheduler', ...flags]);
    // a run, so that the executor's histograms and counters have samples whose labels are checked
    const job = await queue.submit({ task: 'ok', group: 'g' });
    await eventually(async () => (await queue.getJob(job.id))?.state === 'success', 30_000);
    const bodies = await eventually(async () => {
      const b = await Promise.all([worker, scheduler].map(async (u) => (await fetch(u)).text()));
      return b[0].includes('rota_jobs_succeeded_total{') && b;
    }, 20_000);

    const served = new Map<string, string>();
    for (const body of bodies) for (const [metric, type] of families(body)) served.set(metric, type);
    const table = documentedMetrics();
    expect([...served.keys()].sort()).toEqual([...table.keys()].sort());
    for (const [metric, type] of served) expect(`${metric} ${type}`).toBe(`${metric} ${table.get(metric)?.type}`);

    const familyOf = (sample: string) => (table.has(sample) ? sample : sample.replace(/_(bucket|sum|count)$/, ''));
    let checked = 0;
    for (const body of bodies) {
      for (const s of samples(body)) {
        const row = table.get(familyOf(s.name));
        expect(row, s.name).toBeDefined();
        const labels = Object.keys(s.labels).filter((l) => !(l === 'le' && s.name.endsWith('_bucket')));
        expect(`${s.name}: ${labels.sort().join(',')}`).toBe(`${s.name}: ${[...row!.labels].sort().join(',')}`);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });
});

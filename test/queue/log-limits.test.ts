/**
 * Issue 38, item 16: a handler's log lines are bounded: a line is cut at 8 KiB, a run stores at
 * most 1 MiB of lines, each cut marked; a job keeps its newest 1,000 lines.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LOG_LINE_BYTES, MAX_RUN_LOG_BYTES } from '../../src/executor/log-limits.js';
import type { Job } from '../../src/index.js';
import { closeAll, openQueue, openWorker, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);

/** The job's log lines once its run ended. */
async function logsOf(handler: (ctx: { log: (...parts: unknown[]) => void }) => void): Promise<string[]> {
  const name = uniqueQueue('log-limits');
  const q = openQueue(name);
  const done: Job[] = [];
  const w = openWorker(name, { t: handler });
  w.on('completed', (j) => done.push(j));
  const job = await q.submit({ task: 't' });
  await until(w, 'completed', () => done.length === 1);
  await w.close();
  return q.jobLogs(job.id);
}

const bytes = (lines: string[]) => lines.reduce((n, l) => n + Buffer.byteLength(l), 0);

describe('log lines', () => {
  it('stores five 10 MB lines as five cut lines, each saying how much was cut', async () => {
    const big = 'x'.repeat(10_000_000);
    const lines = await logsOf(({ log }) => {
      for (let i = 0; i < 5; i++) log(big);
    });
    expect(lines).toHaveLength(5);
    for (const l of lines) {
      expect(Buffer.byteLength(l)).toBeLessThanOrEqual(MAX_LOG_LINE_BYTES + 40); // + the time stamp
      expect(l).toMatch(/ … \[cut: \d+ bytes\]$/);
    }
    const cut = Number(/\[cut: (\d+) bytes\]$/.exec(lines[0])![1]);
    expect(lines[0].length - lines[0].indexOf('x') - ` … [cut: ${cut} bytes]`.length + cut).toBe(big.length);
  });

  it('cuts a line of many-byte characters on a character boundary', async () => {
    const [line] = await logsOf(({ log }) => log('é'.repeat(10_000)));
    expect(line).not.toContain('\uFFFD');
    expect(line).toMatch(/é … \[cut: \d+ bytes\]$/);
  });

  it('stores at most 1 MiB of lines a run, then one line that says the rest is dropped', async () => {
    const line = 'y'.repeat(4000);
    const lines = await logsOf(({ log }) => {
      for (let i = 0; i < 600; i++) log(line); // 2.4 MB
    });
    expect(bytes(lines)).toBeLessThanOrEqual(MAX_RUN_LOG_BYTES + 600 * 40);
    expect(lines.length).toBeLessThan(600);
    expect(lines.at(-1)).toMatch(/log limit: this run stored \d+ bytes of lines; its further lines are dropped\]$/);
    expect(lines.filter((l) => l.includes('log limit'))).toHaveLength(1);
  });

  it('keeps short lines whole', async () => {
    const lines = await logsOf(({ log }) => log('hello', { a: 1 }, 2));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/ hello \{"a":1\} 2$/);
  });
});

/**
 * Issue 38, item 4: every kind of key under a prefix of its own, so that no job id (any text)
 * names another job's side key. Job `X:logs` and job X's log lines used to be one key.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Job } from '../../src/index.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);

describe('job ids ending in :logs', () => {
  it('retention of job X leaves a delayed job `X:logs` alone (its record, its delayed entry, the counts)', async () => {
    const name = uniqueQueue('logs-retention');
    const q = openQueue(name);
    await q.submit({ task: 'later', id: 'backup:logs', delay: 3_600_000 });
    const done: Job[] = [];
    const w = openWorker(name, { run: ({ log }) => log('ran') }, { keepSucceeded: { count: 0 } });
    w.on('completed', (j) => done.push(j));
    await q.submit({ task: 'run', id: 'backup' });
    await until(w, 'completed', () => done.length === 1);
    await eventually(async () => (await q.getJob('backup')) === null);
    const kept = await q.getJob('backup:logs');
    expect(kept?.state).toBe('delayed');
    expect((await q.counts()).delayed).toBe(1);
  });

  it("keeps X's log lines when a job `X:logs` exists", async () => {
    const name = uniqueQueue('logs-shadow');
    const q = openQueue(name);
    await q.submit({ task: 'later', id: 'X:logs', delay: 3_600_000 });
    const done: Job[] = [];
    const w = openWorker(name, { run: ({ log }) => log('hello from X') });
    w.on('completed', (j) => done.push(j));
    await q.submit({ task: 'run', id: 'X' });
    await until(w, 'completed', () => done.length === 1);
    const logs = await eventually(async () => {
      const lines = await q.jobLogs('X');
      return lines.length > 0 && lines;
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/hello from X$/);
    expect((await q.getJob('X:logs'))?.state).toBe('delayed');
  });

  it('accepts a job `X:logs` submitted after X logged', async () => {
    const name = uniqueQueue('logs-after');
    const q = openQueue(name);
    const done: Job[] = [];
    const w = openWorker(name, { run: ({ log }) => log('line') });
    w.on('completed', (j) => done.push(j));
    await q.submit({ task: 'run', id: 'X' });
    await until(w, 'completed', () => done.length === 1);
    await eventually(async () => (await q.jobLogs('X')).length > 0);
    const late = await q.submit({ task: 'later', id: 'X:logs', delay: 3_600_000 });
    expect(late.state).toBe('delayed');
    expect(await q.jobLogs('X')).toHaveLength(1);
  });

  it('stores a job record and its log lines under distinct prefixes', async () => {
    const name = uniqueQueue('logs-prefix');
    const q = openQueue(name);
    const done: Job[] = [];
    const w = openWorker(name, { run: ({ log }) => log('line') });
    w.on('completed', (j) => done.push(j));
    await q.submit({ task: 'run', id: 'k' });
    await until(w, 'completed', () => done.length === 1);
    await eventually(async () => (await q.jobLogs('k')).length > 0);
    const raw = rawClient();
    try {
      const keys = (await raw.keys(`{rota:${name}}:*`)).map((k) => k.slice(`{rota:${name}}:`.length)).sort();
      expect(keys).toContain('j:k');
      expect(keys).toContain('log:k');
      expect(keys.filter((k) => k.startsWith('j:'))).toEqual(['j:k']);
    } finally {
      raw.disconnect();
    }
  });
});

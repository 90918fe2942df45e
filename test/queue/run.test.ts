import { describe, expect, it, vi } from 'vitest';
import type { Job } from '../../src/index.js';
import { Run, type RunHooks } from '../../src/queue/run.js';

const hooks: RunHooks = { log: () => {}, progress: () => {} };
const job = (task: string): Job => ({
  id: 'j1', task, group: 'g', args: null, priority: 'low', subject: '', submitter: '',
  state: 'scheduled', retries: 0, maxRetries: 0, submitted: 0,
});

describe('a run', () => {
  it('gives a handler that reads its signal only after the abort a signal already aborted, with the reason', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let seen: { aborted: boolean; message: string } | null = null;
    const run = new Run(job('late'), {
      late: async (ctx) => {
        await gate;
        seen = { aborted: ctx.signal.aborted, message: (ctx.signal.reason as Error).message };
      },
    }, hooks, 1000);
    run.abort('cancel');
    release();
    expect(await run.done).toEqual({ code: 'c' });
    expect(seen).toEqual({ aborted: true, message: 'job was cancelled' });
  });

  it('aborts a signal the handler holds, and stops its grace timer once the handler gives up', async () => {
    vi.useFakeTimers();
    try {
      const run = new Run(job('hold'), {
        hold: ({ signal }) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      }, hooks, 60_000);
      await Promise.resolve();
      run.abort('shutdown');
      expect(vi.getTimerCount()).toBe(1);
      expect(await run.done).toEqual({ code: 'r' });
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

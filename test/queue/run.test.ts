import { describe, expect, it, vi } from 'vitest';
import { Run, type RunHooks } from '../../src/executor/run.js';
import type { Job } from '../../src/index.js';

const hooks: RunHooks = {
  log: () => {},
  progress: () => {},
  fanOut: async () => 0,
  children: async () => ({ counts: null, items: [] }),
};
const job = (task: string): Job => ({
  id: 'j1',
  task,
  group: 'g',
  args: null,
  priority: 'low',
  subject: '',
  submitter: '',
  state: 'scheduled',
  retries: 0,
  maxRetries: 0,
  submitted: 0,
});

describe('a run', () => {
  it('gives a handler that reads its signal only after the abort a signal already aborted, with the reason', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let seen: { aborted: boolean; message: string } | null = null;
    const run = new Run(
      job('late'),
      {
        late: async (ctx) => {
          await gate;
          seen = { aborted: ctx.signal.aborted, message: (ctx.signal.reason as Error).message };
        },
      },
      hooks,
      1000,
    );
    run.abort('cancel');
    release();
    expect(await run.done).toEqual({ code: 'c' });
    expect(seen).toEqual({ aborted: true, message: 'job was cancelled' });
  });

  it('aborts a signal the handler holds, and stops its grace timer once the handler gives up', async () => {
    vi.useFakeTimers();
    try {
      const run = new Run(
        job('hold'),
        {
          hold: ({ signal }) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        },
        hooks,
        60_000,
      );
      await Promise.resolve();
      run.abort('shutdown');
      expect(vi.getTimerCount()).toBe(1);
      expect(await run.done).toEqual({ code: 'r' });
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('hands a handler that destructures or spreads its context working log and progress hooks and a signal, and ends with what it returned', async () => {
    const lines: string[] = [];
    const steps: number[] = [];
    const seen: RunHooks = {
      log: (j, line) => lines.push(`${j.id} ${line}`),
      progress: (_j, n) => steps.push(n),
      fanOut: async () => 0,
      children: async () => ({ counts: null, items: [] }),
    };
    const run = new Run(
      job('work'),
      {
        work: (ctx) => {
          // a handler may destructure its context, or spread it into one of its own
          const { args, job: j, log, progress, signal } = { ...ctx };
          log('working on', j.task, { args });
          progress(50);
          return signal.aborted ? 0 : 7;
        },
      },
      seen,
      1000,
    );
    expect(await run.done).toEqual({ code: 's', result: 7 });
    expect(lines).toEqual(['j1 working on work {"args":null}']);
    expect(steps).toEqual([50]);
  });

  it('tells its owner once how it ended: a handler that throws fails, an unknown task is unhandled (passed on)', async () => {
    const ended: Array<[string, string, string | undefined]> = [];
    const onEnd = (r: Run, o: { code: string; error?: Error }) => ended.push([r.job.task, o.code, o.error?.message]);
    const throwing = new Run(
      job('boom'),
      {
        boom: () => {
          throw new Error('bang');
        },
      },
      hooks,
      1000,
      false,
      onEnd,
    );
    const unknown = new Run(job('nope'), {}, hooks, 1000, false, onEnd);
    expect(ended).toEqual([]); // not before the caller could note the runs
    await Promise.all([throwing.done, unknown.done]);
    throwing.settleNow({ code: 'r' });
    expect(ended).toEqual([
      ['boom', 'f', 'bang'],
      ['nope', 'u', expect.stringContaining('nope')],
    ]);
  });

  it('fails a run whose handler returns a thenable that throws, rather than letting the error escape', async () => {
    const bad = {
      // biome-ignore lint/suspicious/noThenProperty: the test needs a thenable that throws.
      then() {
        throw new Error('broken thenable');
      },
    };
    const run = new Run(job('odd'), { odd: () => bad as unknown as Promise<void> }, hooks, 1000);
    const outcome = await run.done;
    expect([outcome.code, outcome.error?.message]).toEqual(['f', 'broken thenable']);
  });
});

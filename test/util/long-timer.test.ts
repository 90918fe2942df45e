/** Timers longer than Node's setTimeout takes (2^31 ms): the helper, and a run's timebox through a real executor. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Job } from '../../src/index.js';
import { clearLongTimeout, MAX_TIMEOUT_MS, setLongTimeout } from '../../src/util/long-timer.js';
import { closeAll, openQueue, openWorker, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);
const DAY = 86_400_000;

describe('a long timer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('fires a 50-day timer at 50 days, not before (the fake timers cap a plain setTimeout of 2^31 ms or more as Node does)', () => {
    vi.useFakeTimers();
    let fired = 0;
    setLongTimeout(() => fired++, 50 * DAY);
    vi.advanceTimersByTime(MAX_TIMEOUT_MS + 1);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(50 * DAY - MAX_TIMEOUT_MS - 2);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(1);
    vi.advanceTimersByTime(100 * DAY);
    expect(fired).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is cancelled before its first step ends and after it (re-armed), and fires a short one as setTimeout does', () => {
    vi.useFakeTimers();
    let fired = 0;
    const early = setLongTimeout(() => fired++, 50 * DAY);
    const late = setLongTimeout(() => fired++, 50 * DAY);
    vi.advanceTimersByTime(DAY);
    clearLongTimeout(early);
    vi.advanceTimersByTime(30 * DAY);
    clearLongTimeout(late);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100 * DAY);
    expect(fired).toBe(0);

    const short = setLongTimeout(() => fired++, 10);
    vi.advanceTimersByTime(10);
    expect(fired).toBe(1);
    clearLongTimeout(short); // fired already: nothing to do
    clearLongTimeout(null);
  });
});

describe('a run with a maxRuntime past 2^31 ms', () => {
  it('runs its handler to success instead of timing out at once', async () => {
    const name = uniqueQueue();
    const q = openQueue(name);
    const job = await q.submit({ task: 'wait', maxRuntime: 2 ** 31 + 1000 });
    const w = openWorker(name, {
      wait: ({ signal }) =>
        new Promise<string>((resolve, reject) => {
          const t = setTimeout(() => resolve('waited'), 50);
          signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(signal.reason);
          });
        }),
    });
    const ended = await new Promise<Job>((resolve) => {
      w.once('completed', resolve);
      w.once('failed', resolve);
    });
    expect(ended.state).toBe('success');
    const stored = (await q.getJob(job.id))!;
    expect([stored.state, stored.error, stored.result]).toEqual(['success', undefined, 'waited']);
    expect(stored.maxRuntime).toBe(2 ** 31 + 1000);
  });
});

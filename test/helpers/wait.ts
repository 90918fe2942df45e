/**
 * Waiting in tests, defined once: `sleep` (for a pause that is itself the thing tested, or a
 * fixture's simulated work: never to hope something happened), `eventually` and `until`, which
 * wait for a condition, polled or re-checked on each event of an emitter.
 */
import type { EventEmitter } from 'node:events';

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How long a wait lasts before it fails, and how often a poll checks. */
export interface WaitOptions {
  /** Fail after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between two checks of a poll (default 20 ms). */
  intervalMs?: number;
}

/** A condition checked: the value it gives when it holds (anything falsy: not yet). */
type Check<T> = () => T | undefined | false | null | Promise<T | undefined | false | null>;

const DEFAULT_TIMEOUT_MS = 10_000;

/** Polls `check` until it gives a truthy value, which it returns; fails naming `description` after the timeout. */
async function poll<T>(description: string, check: Check<T>, opts: WaitOptions): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await sleep(opts.intervalMs ?? 20);
  }
}

/** `timeoutMs` as the older positional argument, or the options. */
const optionsOf = (o: number | WaitOptions | undefined): WaitOptions => (typeof o === 'number' ? { timeoutMs: o } : (o ?? {}));

/**
 * Resolves with the first truthy value of `check`, polled every 20 ms, or fails after the
 * timeout (10 s by default) with `description` in the message. A check that throws fails at once.
 * (The form without a description is the older one: its failure names no condition.)
 */
export function eventually<T>(description: string, check: Check<T>, opts?: number | WaitOptions): Promise<T>;
export function eventually<T>(check: Check<T>, opts?: number | WaitOptions): Promise<T>;
export function eventually<T>(a: string | Check<T>, b?: Check<T> | number | WaitOptions, c?: number | WaitOptions): Promise<T> {
  if (typeof a === 'string') return poll(a, b as Check<T>, optionsOf(c));
  return poll('a condition', a, optionsOf(b as number | WaitOptions | undefined));
}

/**
 * Waits until a condition holds and gives its value. Polled: `until(description, check, opts)`
 * checks every 20 ms (as {@link eventually}). On events: `until(emitter, event, check, timeoutMs)`
 * checks now and after each `event` of `emitter` (20 s by default), for a condition that only an
 * event can change.
 */
export function until<T>(description: string, check: Check<T>, opts?: WaitOptions): Promise<T>;
export function until<T>(
  emitter: EventEmitter,
  event: string,
  check: () => T | undefined | false,
  timeoutMs?: number,
): Promise<T>;
export function until<T>(
  a: string | EventEmitter,
  b: Check<T> | string,
  c?: WaitOptions | (() => T | undefined | false),
  d?: number,
): Promise<T> {
  if (typeof a === 'string') return poll(a, b as Check<T>, (c as WaitOptions | undefined) ?? {});
  return onEvents(a, b as string, c as () => T | undefined | false, d ?? 20_000);
}

/** Resolves when `check` holds, checking now and after each event of `emitter` named `event`. */
function onEvents<T>(emitter: EventEmitter, event: string, check: () => T | undefined | false, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const test = () => {
      const v = check();
      if (v) {
        cleanup();
        resolve(v);
      }
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`timed out after ${timeoutMs} ms waiting on "${event}"`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      emitter.off(event, test);
    };
    emitter.on(event, test);
    test();
  });
}

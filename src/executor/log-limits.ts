/**
 * The bounds of what a handler's `ctx.log` stores: a line is cut at {@link MAX_LOG_LINE_BYTES},
 * a run stores at most {@link MAX_RUN_LOG_BYTES} of lines, and a job keeps its newest
 * {@link MAX_LOG_LINES} lines, so a job's log holds at most some 8 MiB whatever its handler logs.
 * A run's error is cut the same way ({@link cutError}), before anything stores or logs it.
 */

/** Longest log line stored (bytes of UTF-8, the cut mark included). */
export const MAX_LOG_LINE_BYTES = 8 * 1024;

/** Most bytes of log lines one run stores; past them one line says so and the rest are dropped. */
export const MAX_RUN_LOG_BYTES = 1024 * 1024;

/** Lines a job keeps (the newest; its log list is trimmed to them). */
export const MAX_LOG_LINES = 1000;

/** Room kept at a cut line's end for its mark (` … [cut: <n> bytes]`). */
const MARK_ROOM = 40;

/** `text`, or when it is longer than `max` bytes its head, marked with what was cut (all within `max`). */
function cut(text: string, max: number): string {
  if (text.length * 3 <= max) return text;
  // (a string's UTF-8 is at most 3 bytes a UTF-16 unit: only the head that may fit is encoded)
  const bytes = Buffer.from(text.length > max ? text.slice(0, max) : text);
  const total = text.length > max ? Buffer.byteLength(text) : bytes.length;
  if (total <= max) return text;
  let end = max - MARK_ROOM;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // not inside a character
  return `${bytes.toString('utf8', 0, end)} … [cut: ${total - end} bytes]`;
}

/** `line`, or when it is longer than {@link MAX_LOG_LINE_BYTES} its head, marked with what was cut. */
export function cutLogLine(line: string): string {
  return cut(line, MAX_LOG_LINE_BYTES);
}

/**
 * Longest error message, and longest error text (the stack, which holds the message), that a
 * run's error keeps (bytes of UTF-8, the cut mark included).
 */
export const MAX_ERROR_BYTES = 8 * 1024;

/**
 * A run's error as Rota stores, emits and logs it: `err` itself when its message and stack are
 * within {@link MAX_ERROR_BYTES}, else a copy (of its class and own fields) whose message and
 * stack are cut, marked with what was cut. Its `stack` is always a string: the error text stored
 * (the job's `error`, its attempts, the events stream, a periodic run's history).
 */
export function cutError(err: Error): Error {
  let message: string;
  let stack: string;
  try {
    message = String(err.message);
    stack = typeof err.stack === 'string' ? err.stack : `${String(err.name)}: ${message}`;
  } catch {
    // (a hostile error whose fields throw when read)
    return new Error('the error thrown could not be read');
  }
  const shortMessage = cut(message, MAX_ERROR_BYTES);
  const shortStack = cut(stack, MAX_ERROR_BYTES);
  if (shortMessage === message && shortStack === stack && err.stack === stack) return err;
  let copy: Error;
  try {
    copy = Object.assign(Object.create(Object.getPrototypeOf(err) as object) as Error, err);
  } catch {
    copy = new Error();
  }
  const field = (value: unknown) => ({ value, writable: true, configurable: true, enumerable: false });
  Object.defineProperties(copy, { message: field(shortMessage), stack: field(shortStack) });
  if (err.cause !== undefined) Object.defineProperty(copy, 'cause', field(err.cause));
  return copy;
}

/** The line a run's log ends with once it reached {@link MAX_RUN_LOG_BYTES}. */
export const RUN_LOG_FULL = `[log limit: this run stored ${MAX_RUN_LOG_BYTES} bytes of lines; its further lines are dropped]`;

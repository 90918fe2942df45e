/**
 * The bounds of what a handler's `ctx.log` stores: a line is cut at {@link MAX_LOG_LINE_BYTES},
 * a run stores at most {@link MAX_RUN_LOG_BYTES} of lines, and a job keeps its newest
 * {@link MAX_LOG_LINES} lines, so a job's log holds at most some 8 MiB whatever its handler logs.
 */

/** Longest log line stored (bytes of UTF-8, the cut mark included). */
export const MAX_LOG_LINE_BYTES = 8 * 1024;

/** Most bytes of log lines one run stores; past them one line says so and the rest are dropped. */
export const MAX_RUN_LOG_BYTES = 1024 * 1024;

/** Lines a job keeps (the newest; its log list is trimmed to them). */
export const MAX_LOG_LINES = 1000;

/** Room kept at a cut line's end for its mark (` … [cut: <n> bytes]`). */
const MARK_ROOM = 40;

/** `line`, or when it is longer than {@link MAX_LOG_LINE_BYTES} its head, marked with what was cut. */
export function cutLogLine(line: string): string {
  if (line.length * 3 <= MAX_LOG_LINE_BYTES) return line;
  const bytes = Buffer.from(line);
  if (bytes.length <= MAX_LOG_LINE_BYTES) return line;
  let end = MAX_LOG_LINE_BYTES - MARK_ROOM;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // not inside a character
  return `${bytes.toString('utf8', 0, end)} … [cut: ${bytes.length - end} bytes]`;
}

/** The line a run's log ends with once it reached {@link MAX_RUN_LOG_BYTES}. */
export const RUN_LOG_FULL = `[log limit: this run stored ${MAX_RUN_LOG_BYTES} bytes of lines; its further lines are dropped]`;

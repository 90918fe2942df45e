/** The no-op handler the isolated drain cases run in a thread or a process (benchmarks/cases.ts: isolate-c100-*). */
export default function noop(): undefined {
  return undefined;
}

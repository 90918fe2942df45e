/**
 * Timer benchmark: next elapses per second, each computed from the previous
 * one (as a scheduler does), for a complex calendar event and a cron rule.
 *
 *   npx tsx benchmarks/probes/timers.ts
 */
import { parseTimer, type Timer } from '../../src/timers/index.js';

interface Case {
  name: string;
  spec: string;
  timezone?: string;
}

const CASES: Case[] = [
  { name: 'calendar, complex, Europe/Paris', spec: 'Mon..Fri *-1..11-1..7,15..21 08..18/2:00/15:30', timezone: 'Europe/Paris' },
  { name: 'calendar, complex, UTC', spec: 'Mon..Fri *-1..11-1..7,15..21 08..18/2:00/15:30' },
  { name: 'calendar, every 15 min, UTC', spec: '*:0/15' },
  { name: 'cron, complex, Europe/Paris', spec: '30 */15 8-18/2 1-7,15-21 1-11 1-5', timezone: 'Europe/Paris' },
  { name: 'cron, complex, UTC', spec: '30 */15 8-18/2 1-7,15-21 1-11 1-5' },
  { name: 'interval, every 30s', spec: 'every 30s' },
];

function measure(timer: Timer, ms: number): { perSecond: number; count: number } {
  const start = new Date('2026-01-01T00:00:00Z');
  let at: Date = start;
  let count = 0;
  const began = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let i = 0; i < 200; i++) {
      const next = timer.next(at);
      at = next ?? start; // wrap around if the timer ever runs out
      count++;
    }
    elapsed = performance.now() - began;
  }
  return { perSecond: (count / elapsed) * 1000, count };
}

function main(): void {
  const duration = Number(process.env.BENCH_MS ?? 2000);
  console.log(`Timer next-elapse throughput (${duration} ms per case, node ${process.version})`);
  for (const c of CASES) {
    const timer = parseTimer(c.spec, { timezone: c.timezone });
    measure(timer, 200); // warm-up
    const { perSecond } = measure(timer, duration);
    const label = `${c.name}: ${c.spec}${c.timezone ? ` [${c.timezone}]` : ''}`;
    console.log(`${label.padEnd(84)} ${Math.round(perSecond).toLocaleString('en-US').padStart(10)} next/s`);
  }
}

main();

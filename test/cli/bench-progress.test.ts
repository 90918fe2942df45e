/**
 * `rota bench`'s progress (src/bench/progress.ts) on a clock of the test's: on a terminal one
 * line redrawn with the steps' bar, the jobs done and an ETA; elsewhere a line when a step begins
 * and one every 5 s within it. And the slow-ping warning names the likelier cause.
 */
import { describe, expect, it } from 'vitest';
import { slowPingWarning } from '../../src/bench/bench.js';
import { etaText, LINE_EVERY_MS, Progress } from '../../src/bench/progress.js';

function output(isTTY: boolean) {
  const chunks: string[] = [];
  return { out: { isTTY, write: (t: string) => chunks.push(t) }, chunks };
}

describe('bench progress', () => {
  it('redraws one line on a terminal, with the jobs done and an ETA from the step’s pace', () => {
    let now = 1000;
    const { out, chunks } = output(true);
    const p = new Progress(out, () => now);
    p.phase({ workload: 'drain', system: 'rota', step: 1, steps: 5 });
    expect(chunks.pop()).toBe(`\r\x1b[2K[${'#'.repeat(6)}${'.'.repeat(24)}] 2/5 drain on rota`);
    now += 10_000;
    p.jobs(5000, 20_000);
    // 5,000 in 10 s: the 15,000 left take 30 s
    expect(chunks.pop()).toBe(`\r\x1b[2K[${'#'.repeat(6)}${'.'.repeat(24)}] 2/5 drain on rota 5,000/20,000 jobs, ETA 30 s`);
    now += 30_000;
    p.jobs(20_000, 20_000);
    expect(chunks.pop()).toMatch(/ 20,000\/20,000 jobs$/);
    p.jobs(300);
    expect(chunks.pop()).toMatch(/ 300 jobs$/);
    p.end();
    expect(chunks.pop()).toBe('\r\x1b[2K');
  });

  it('prints a line per step, then one every few seconds within it, elsewhere', () => {
    let now = 0;
    const { out, chunks } = output(false);
    const p = new Progress(out, () => now);
    p.phase({ workload: 'fairness', system: 'rota', step: 3, steps: 5 });
    expect(chunks).toEqual(['rota bench: [4/5] fairness on rota\n']);
    now = LINE_EVERY_MS - 1;
    p.jobs(100, 1000);
    expect(chunks).toHaveLength(1);
    now = LINE_EVERY_MS;
    p.jobs(250, 1000);
    expect(chunks[1]).toBe('rota bench: [4/5] fairness on rota: 250/1,000 jobs, ETA 15 s (5 s in)\n');
    now = LINE_EVERY_MS + 1000;
    p.jobs(300, 1000);
    expect(chunks).toHaveLength(2);
    now = 3 * LINE_EVERY_MS + 1000;
    p.jobs(800, 1000);
    expect(chunks[2]).toBe('rota bench: [4/5] fairness on rota: 800/1,000 jobs, ETA 4 s (16 s in)\n');
    p.end();
    expect(chunks).toHaveLength(3);
    expect(etaText(200_000)).toBe('3 min 20 s');
    expect(etaText(3_900_000)).toBe('1 h 5 min');
  });

  it('names the client’s CPU or the network as the likelier cause of a slow ping', () => {
    expect(slowPingWarning(4, 3, 95, 2.5)).toMatch(
      /4\.00 ms: .*this machine's CPU is the likelier cause.*event loop 3\.00 ms late, this process at 95% CPU, load 2\.50 a core/,
    );
    expect(slowPingWarning(4, 0.05, 2, 0.3)).toMatch(/the network is the likelier cause/);
    // (a load above the cores makes the client the likelier cause, though its loop answered at once)
    expect(slowPingWarning(4, 0.05, 2, 1.5)).toMatch(/CPU is the likelier cause/);
  });
});

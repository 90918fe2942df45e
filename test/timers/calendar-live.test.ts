import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseCalendar } from '../../src/timers/calendar.js';

// Optional: compares with the reference on machines that have it. CI may not.
const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const hasSystemd = probe.status === 0 && /^systemd 252\b/.test(probe.stdout);

describe.skipIf(!hasSystemd)('calendar events agree with the live systemd-analyze', () => {
  it('for a sample of specs, zones and base times', () => {
    const specs = ['Mon..Fri *-*-* 09:00', '*-*~1 02:30', '*:0/20', 'Sat *-*-1..7 01:30', '*-02-29 12:00', 'quarterly'];
    const zones = ['Europe/Paris', 'America/New_York'];
    const base = Date.UTC(2026, 9, 24, 12) / 1000;
    for (const spec of specs) {
      for (const tz of zones) {
        const r = spawnSync('systemd-analyze', ['calendar', `--base-time=@${base}`, '--iterations=4', '--', spec], {
          encoding: 'utf8',
          env: { ...process.env, TZ: tz, LC_ALL: 'C' },
        });
        const want = [...r.stdout.matchAll(/\(in UTC\): \w+ (\S+) (\S+) UTC/g)].map((m) => `${m[1]}T${m[2]}Z`);
        const timer = parseCalendar(spec, tz);
        const got: string[] = [];
        let us: number | null = base * 1e6;
        for (let i = 0; i < 4 && us !== null; i++) {
          us = timer.nextMicros(us);
          if (us !== null) got.push(new Date(Math.floor(us / 1e6) * 1000).toISOString().replace('.000Z', 'Z'));
        }
        expect(got, `${spec} in ${tz}`).toEqual(want);
      }
    }
  });
});

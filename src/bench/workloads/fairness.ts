/**
 * Fairness (noisy neighbour): one heavy tenant with a backlog of 10 ms jobs at concurrency 100,
 * while 10 light tenants each submit one 10 ms job every 50 ms. Measures light-tenant wait
 * (submit → pickup), the heavy tenant's drain rate, and Jain's index of the service shares of
 * groups that were backlogged during the same 100 ms window.
 *
 * mode 'flood': heavy backlog + light tenants together (the run lasts until the backlog is drained or the cap).
 * mode 'noflood': the light tenants alone for `lightMs`, then the heavy backlog alone (its rate is the
 * tenant's drain rate without neighbours, the "FIFO" reference).
 */
import { jain, nowMs, percentiles, sleep } from '../measure.js';
import { type Payload, payload } from '../peers/types.js';
import { Phase, paddingOf, type RunContext, type RunResult, Seen, until } from './common.js';
import { fill } from './drain.js';

export interface FairnessParams {
  mode: 'flood' | 'noflood';
  heavyJobs: number;
  jobMs: number;
  concurrency: number;
  lightTenants: number;
  lightEveryMs: number;
  /** Light-only phase length for noflood. */
  lightMs: number;
  capMs: number;
  /** The heavy tenant's group (default `t0`) and the light tenants' (default `L0`, `L1`, ...). */
  heavyGroup?: string;
  lightGroups?: string[];
}

interface Rec {
  group: string;
  submitted: number;
  started: number;
}

const WINDOW_MS = 100;

/** Mean Jain's index over windows in which two or more groups had work waiting the whole window. */
function windowedJain(recs: Rec[], from: number, to: number): { index: number | null; windows: number } {
  const byGroup = new Map<string, Rec[]>();
  for (const r of recs) {
    let a = byGroup.get(r.group);
    if (!a) {
      a = [];
      byGroup.set(r.group, a);
    }
    a.push(r);
  }
  let sum = 0;
  let windows = 0;
  for (let w = from; w + WINDOW_MS <= to; w += WINDOW_MS) {
    const shares: number[] = [];
    for (const rs of byGroup.values()) {
      let backlogged = false;
      let served = 0;
      for (const r of rs) {
        if (r.submitted <= w && r.started >= w + WINDOW_MS) backlogged = true;
        if (r.started >= w && r.started < w + WINDOW_MS) served++;
      }
      if (backlogged) shares.push(served);
    }
    if (shares.length >= 2) {
      sum += jain(shares);
      windows++;
    }
  }
  return { index: windows ? sum / windows : null, windows };
}

export async function runFairness(ctx: RunContext, p: FairnessParams): Promise<RunResult> {
  const seen = new Seen(ctx.onJobs);
  const recs: Rec[] = [];
  let heavyDone = 0;
  let heavyDoneAt = 0;
  const lightWaits: number[] = [];
  const handler = async (id: string, group: string, data: Payload) => {
    const started = nowMs();
    seen.add(id);
    const g = group || (data.p.startsWith('L') ? data.p.slice(0, data.p.indexOf('|')) : 'heavy');
    recs.push({ group: g, submitted: data.t, started });
    if (g !== 'heavy') lightWaits.push(started - data.t);
    await sleep(p.jobMs);
    if (g === 'heavy') {
      heavyDone++;
      if (heavyDone === p.heavyJobs) heavyDoneAt = performance.now();
    }
  };
  // The light jobs carry their tenant in the payload too, for BullMQ, which has no groups.
  const lightPayload = (k: number): Payload => {
    const base = payload(nowMs(), paddingOf(ctx));
    const tag = `L${k}|`;
    return { t: base.t, p: tag + base.p.slice(tag.length) };
  };

  const heavyGroup = p.heavyGroup ?? 't0';
  const lightGroup = (k: number) => p.lightGroups?.[k] ?? `L${k}`;
  let lightSubmitted = 0;
  const lightPending = new Set<Promise<void>>();
  const startLights = () => {
    const timers = Array.from({ length: p.lightTenants }, (_, k) =>
      setInterval(() => {
        const pr = ctx.adapter.submit({ group: lightGroup(k), data: lightPayload(k) });
        lightSubmitted++;
        lightPending.add(pr);
        void pr.finally(() => lightPending.delete(pr));
      }, p.lightEveryMs),
    );
    return () => timers.forEach(clearInterval);
  };

  if (p.mode === 'flood') await fill(ctx, p.heavyJobs, heavyGroup, 1000, () => payload(nowMs(), paddingOf(ctx)));
  // The heavy group is named 'heavy' in the record.
  const startExec = () =>
    ctx.adapter.startExecutor({
      concurrency: p.concurrency,
      handler: (id, group, data) => handler(id, group === heavyGroup ? 'heavy' : group, data),
    });
  let exec: Awaited<ReturnType<typeof startExec>>;
  let capped = false;
  let heavyRate: number;
  let jainIndex: { index: number | null; windows: number } = { index: null, windows: 0 };
  const phase = await new Phase(ctx.admin).begin();
  const t0 = performance.now();
  const wall0 = nowMs();
  if (p.mode === 'flood') {
    const stop = startLights();
    exec = await startExec();
    capped = !(await until(() => heavyDone >= p.heavyJobs, p.capMs, 5));
    stop();
    const end = heavyDoneAt || performance.now();
    heavyRate = heavyDone / ((end - t0) / 1000);
    jainIndex = windowedJain(recs, wall0, wall0 + (end - t0));
  } else {
    exec = await startExec();
    await sleep(300);
    const stop = startLights();
    await sleep(p.lightMs);
    stop();
    await Promise.all(lightPending);
    await until(() => seen.size >= lightSubmitted, 5000, 5);
    // The backlog alone, timed like the flood case: filled first, then a fresh executor drains it.
    await exec.close();
    await fill(ctx, p.heavyJobs, heavyGroup, 1000, () => payload(nowMs(), paddingOf(ctx)));
    const h0 = performance.now();
    exec = await startExec();
    capped = !(await until(() => heavyDone >= p.heavyJobs, p.capMs, 5));
    heavyRate = heavyDone / (((heavyDoneAt || performance.now()) - h0) / 1000);
  }
  await Promise.all(lightPending);
  await until(() => recs.filter((r) => r.group !== 'heavy').length >= lightSubmitted, 5000, 5);
  const seconds = (performance.now() - t0) / 1000;
  await exec.close();
  const m = await phase.end();
  const [p50, p99] = percentiles(lightWaits, [50, 99]);
  // A capped run left part of the backlog waiting: then only repeats are checked.
  const expected = capped ? seen.size : p.heavyJobs + lightSubmitted;
  const dist = percentiles(
    lightWaits,
    Array.from({ length: 101 }, (_, i) => i),
  );
  return {
    dist,
    jobs: seen.size,
    seconds,
    jobsPerSec: heavyRate,
    ...m,
    expected,
    ...seen.counts(),
    capped,
    extra: {
      p50Ms: p50,
      p99Ms: p99,
      lightJobs: lightWaits.length,
      heavyJobsPerSec: heavyRate,
      jainIndex: jainIndex.index,
      jainWindows: jainIndex.windows,
    },
  };
}

/**
 * A `waiting-children` job's page says why it waits: whose children it waits for (its own, or,
 * for a fan-out's continuation, the parent's), how many have ended and how many are pending, with
 * links to the first pending ones. Its reads are bounded: the job's parent, and the first
 * {@link PENDING_LOOKED} children (one jobTree read).
 */
import { FINAL_STATES, type Job } from '../../queue/job.js';
import type { JobTreeNode } from '../../queue/queue.js';
import type { PageContext } from '../context.js';
import { count, type Html, html } from '../html.js';

/** Children read to find the pending ones the section links to. */
export const PENDING_LOOKED = 200;

/** Pending children the section links to at most. */
const PENDING_LINKS = 10;

/** The "why it waits" section of `job`, in state `waiting-children`; `tree` its children when the page read them. */
export async function childrenWaitSection(ctx: PageContext, job: Job, tree: JobTreeNode | null): Promise<Html> {
  // (a fan-out's continuation `<parent>/after` waits for its parent's children: the counts are the parent's)
  let owner = job;
  if (!job.children && job.id.endsWith('/after')) {
    const parent = await ctx.q.queue.getJob(job.id.slice(0, -'/after'.length));
    if (parent?.continuation === job.id) owner = parent;
  }
  const c = owner.children;
  const link = (id: string) => html`<a class="mono" href="${ctx.base}/jobs/${encodeURIComponent(id)}">${id}</a>`;
  if (!c) {
    return html`<section class="why-waiting"><h2>Why it waits</h2><p>It runs once its children have ended; their counts are gone (its parent was removed).</p></section>`;
  }
  const ended = c.success + c.failed + c.cancelled + c.removed;
  const pending = Math.max(0, c.total - ended);
  const kids = owner === job ? tree : await ctx.q.queue.jobTree(owner.id, PENDING_LOOKED + 1);
  const looked = (kids?.children ?? []).slice(0, PENDING_LOOKED);
  const open = looked.filter((k) => !FINAL_STATES.has(k.job.state)).slice(0, PENDING_LINKS);
  const more = pending > open.length;
  const links = open.length
    ? html`${open.map((k) => html`${link(k.job.id)} <span class="state state-${k.job.state}">${k.job.state}</span> `)}${more ? html`<span class="muted">(and ${count(pending - open.length)} more)</span>` : ''}`
    : html`<span class="muted">${pending > 0 ? `none among the first ${count(looked.length)} (${count(pending)} not submitted yet or further on)` : 'none'}</span>`;
  return html`<section class="why-waiting children-wait"><h2>Why it waits</h2>
<p>It runs once ${owner === job ? 'its children have' : html`the children of ${link(owner.id)} have`} ended: <b class="ended">${count(ended)} of ${count(c.total)}</b> have, <b class="pending">${count(pending)}</b> pending.</p>
<table class="fields"><tr><th>children</th><td>total ${count(c.total)} · ended ${count(ended)} (success ${count(c.success)} · failed ${count(c.failed)} · cancelled ${count(c.cancelled)} · removed ${count(c.removed)}) · pending ${count(pending)} (waiting ${count(c.waiting)} · running ${count(c.running)})</td></tr>
<tr><th>pending</th><td>${links}</td></tr></table></section>`;
}

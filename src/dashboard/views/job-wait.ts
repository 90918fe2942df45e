/**
 * A waiting job's page says why it waits: its place in its group's lists (looked for among at
 * most MAX_LOOKED entries of each list from the end takes come from, so a request's work is
 * bounded however long the lists), and its group's state (runnable, paused, at limit,
 * rate-parked, no live executor).
 */
import { shardOfGroup, shardOfId } from '../../redis/shards.js';
import type { PageContext } from '../context.js';
import { groupStatus, groupStatusHtml, liveExecutorsOf } from '../group-status.js';
import { count, type Html, html } from '../html.js';

/** Entries of each of a group's lists looked at to find a job (LPOS MAXLEN). */
export const MAX_LOOKED = 10_000;

const LIST_NAMES = { r: 'released and due retries (taken first)', h: 'high priority', l: 'low priority' } as const;

/** The "why waiting" section of waiting job `id` of group `group`. */
export async function jobWaitSection(ctx: PageContext, id: string, group: string, priority: string): Promise<Html> {
  const live = ctx.q.live;
  const shard = shardOfId(id, live.shards) ?? shardOfGroup(group, live.shards);
  const store = live.stores[shard] ?? live.stores[0];
  const w = await store.detail.jobWait(id, group, MAX_LOOKED);
  const status = groupStatus({ ...w, liveExecutors: liveExecutorsOf(live, group), now: w.now });
  const ownList = priority === 'high' ? 'h' : 'l';
  let place: Html;
  if (w.list && w.place !== undefined) {
    const r = w.lengths.r;
    const ahead =
      w.list !== 'r' && r > 0
        ? ` Its group's ${r === 1 ? 'released or due job goes' : `${count(r)} released or due jobs go`} first.`
        : '';
    place = html`<b class="place">${count(w.place)}</b> of ${count(w.lengths[w.list])} in its group's ${LIST_NAMES[w.list]} list (1 is taken next).${ahead}`;
  } else {
    const len = w.lengths[ownList];
    place = html`not among the ${count(Math.min(len, MAX_LOOKED))} next of its group's ${LIST_NAMES[ownList]} list${len > MAX_LOOKED ? html` (of ${count(len)}): it is further back` : ' (it may have just been taken)'}.`;
  }
  return html`<section class="why-waiting"><h2>Why it waits</h2>
<table class="fields"><tr><th>place</th><td>${place}</td></tr>
<tr><th>group state</th><td>${groupStatusHtml(status, w.now)} <a href="${ctx.base}/groups?group=${encodeURIComponent(group)}">group</a></td></tr>
<tr><th title="the counting scheme takes high and low jobs in turn (for example two high, then one low); a due retry goes first">lists</th><td>released / due ${count(w.lengths.r)} · high ${count(w.lengths.h)} · low ${count(w.lengths.l)} · running ${count(w.running)}</td></tr></table></section>`;
}

/**
 * The groups page: paged and sorted on the server (the order from the group index, the values
 * read fresh for the page's groups in one call), with pause, resume, limit, weight and rate
 * actions, and the share of recent takes per group (fairness).
 */
import { EMPTY_GROUP } from '../../redis/group-state.js';
import { GROUP_FIELDS } from '../../redis/wire.js';
import { formatDuration } from '../../timers/duration.js';
import type { Page, PageContext } from '../context.js';
import { waitingOf } from '../group-index.js';
import { groupStatus, groupStatusHtml, liveExecutorsOf } from '../group-status.js';
import { ago, count, html } from '../html.js';
import { readGroups } from '../shards.js';
import { actionButton, csrfField } from './layout.js';
import { pageOf, pager } from './paging.js';

/** Record fields the page shows in columns of their own; any other field is a setting shown as it is. */
const SHOWN = new Set<string>(GROUP_FIELDS);
const SORTS = ['group', 'waiting', 'nh', 'nl', 'running', 'stuck', 'oldest', 'limit', 'weight', 'rate', 'paused'];
/** Events entries read for the fairness view, and takes counted at most. */
const FAIRNESS_EVENTS = 200;
const FAIRNESS_TAKES = 2000;

export async function groups(ctx: PageContext): Promise<Page> {
  const index = ctx.q.live.groups;
  await index.ready();
  const extra = GROUP_FIELDS.filter((f) => !SHOWN.has(f));
  const sorts = [...SORTS, ...extra];
  const sort = sorts.includes(ctx.query.get('sort') ?? '') ? ctx.query.get('sort')! : 'waiting';
  const desc = ctx.query.get('dir') ? ctx.query.get('dir') === 'desc' : sort !== 'group';
  const { offset, limit } = pageOf(ctx.query);
  const find = ctx.query.get('group') ?? '';
  let names = find ? [find] : index.page(sort, desc, offset, limit);
  const fairness = { events: FAIRNESS_EVENTS, maxTakes: FAIRNESS_TAKES };
  let read = await readGroups(ctx.q.live, names, fairness);
  // Groups with runs and nothing waiting are listed from the runs the read found: when those
  // changed the page's groups, the page is read again (seldom: only as such groups come and go).
  if (index.setRunning(read.running) && !find) {
    const again = index.page(sort, desc, offset, limit);
    if (again.join('\n') !== names.join('\n')) {
      names = again;
      read = await readGroups(ctx.q.live, names, fairness);
    }
  }
  names.forEach((n, i) => {
    index.update(
      n,
      read.byShard.map((rows) => rows[i]),
    );
  });
  const now = read.now;
  const sortLink = (col: string, label: string) => {
    const q = new URLSearchParams(ctx.query);
    q.set('sort', col);
    q.set('dir', col === sort ? (desc ? 'asc' : 'desc') : col === 'group' ? 'asc' : 'desc');
    q.delete('offset');
    return html`<a href="${ctx.base}/groups?${q}"${col === sort ? html` class="sorted ${desc ? 'desc' : 'asc'}"` : ''}>${label}</a>`;
  };
  const rows = names.map((name, i) => {
    const row = read.rows[i];
    // (a group with runs and nothing waiting has no record: its settings are the defaults)
    const g = row.state ?? (row.running > 0 ? EMPTY_GROUP : undefined);
    const rate = g && g.rate > 0 ? `${g.rate}/${formatDuration(g.per)}` : '';
    const enc = { group: name };
    const status = groupStatus({ ...row, liveExecutors: liveExecutorsOf(ctx.q.live, name), now });
    return html`<tr data-group="${name}">
<td class="name">${name}</td>
<td class="num">${g ? count(waitingOf(g)) : '–'}</td><td class="num">${g ? count(g.nh) : '–'}</td><td class="num">${g ? count(g.nl) : '–'}</td><td class="num">${g ? count(Math.max(0, g.nr - g.stuck)) : '–'}</td>
<td class="num">${count(row.running)}</td><td class="num">${g ? count(g.stuck) : '–'}</td>
<td>${row.oldest !== undefined ? ago(row.oldest, now) : '–'}</td>
<td class="num">${g && g.limit > 0 ? g.limit : 'none'}</td><td class="num">${g ? g.weight : 1}</td><td class="num rate">${rate || 'none'}</td>
${extra.map((f) => html`<td class="num">${g ? String((g as Record<string, number>)[f]) : '–'}</td>`)}
<td>${g?.paused ? html`<span class="paused">paused</span>` : 'no'}</td><td class="status">${groupStatusHtml(status, now)}</td>
<td class="actions">${
      g?.paused ? actionButton(ctx, 'group/resume', 'Resume', enc) : actionButton(ctx, 'group/pause', 'Pause', enc)
    }${
      ctx.readOnly
        ? ''
        : html`<form method="post" action="${ctx.base}/actions/group/settings" class="inline settings">${csrfField(ctx)}<input type="hidden" name="group" value="${name}"><input type="hidden" name="return" value="${ctx.base}/groups?${ctx.query}"><label>limit <input name="limit" type="number" min="0" value="${g ? g.limit : 0}"></label><label>weight <input name="weight" type="number" min="1" max="1000" value="${g ? g.weight : 1}"></label><label title="at most max starts in any window of per, such as 10/1s or 600/1h; empty: no rate limit">rate <input name="rate" size="7" placeholder="10/1s" value="${rate}"></label><button type="submit" data-action="group/settings">Set</button></form>`
    }</td></tr>`;
  });
  const shares = [...read.shares.entries()].sort((a, b) => b[1] - a[1]);
  const top = shares.slice(0, 20);
  const rest = shares.slice(20).reduce((n, [, k]) => n + k, 0);
  return {
    title: 'Groups',
    nav: 'groups',
    main: html`<h1>Groups <small>${count(index.size)} with jobs, runs or settings</small></h1>
<form method="get" action="${ctx.base}/groups" class="filters"><label>find group <input name="group" value="${find}"></label><button type="submit">Find</button>${find ? html` <a href="${ctx.base}/groups">all groups</a>` : ''}</form>
<table class="groups"><thead><tr>
<th>${sortLink('group', 'group')}</th><th>${sortLink('waiting', 'waiting')}</th><th>${sortLink('nh', 'high')}</th><th>${sortLink('nl', 'low')}</th><th>released / due</th><th>${sortLink('running', 'running')}</th><th>${sortLink('stuck', 'stuck')}</th><th>${sortLink('oldest', 'oldest wait')}</th><th>${sortLink('limit', 'limit')}</th><th>${sortLink('weight', 'weight')}</th><th>${sortLink('rate', 'rate')}</th>
${extra.map((f) => html`<th>${sortLink(f, f)}</th>`)}<th>${sortLink('paused', 'paused')}</th><th title="why its jobs wait: runnable, paused, at limit, rate-parked or no live executor">state</th><th></th>
</tr></thead><tbody>${rows}</tbody></table>
${names.length === 0 ? html`<p class="empty">${find ? 'No such group.' : 'No group has jobs, runs or settings.'}</p>` : ''}
${find ? '' : pager(ctx, '/groups', offset, limit, index.size)}
<section class="fairness"><h2>Fairness: share of the last ${count(read.takes)} takes${read.since !== undefined ? html` (since ${ago(read.since, now)})` : ''}</h2>
${
  read.takes === 0
    ? html`<p class="empty">No takes in the recent events.</p>`
    : html`<table><tbody>${top.map(
        ([group, n]) =>
          html`<tr><td class="name">${group}</td><td class="bar"><meter min="0" max="${read.takes}" value="${n}"></meter></td><td class="num">${((100 * n) / read.takes).toFixed(1)}%</td><td class="num">${count(n)}</td></tr>`,
      )}${rest ? html`<tr><td>${count(shares.length - top.length)} other groups</td><td class="bar"><meter min="0" max="${read.takes}" value="${rest}"></meter></td><td class="num">${((100 * rest) / read.takes).toFixed(1)}%</td><td class="num">${count(rest)}</td></tr>` : ''}</tbody></table>`
}</section>`,
  };
}

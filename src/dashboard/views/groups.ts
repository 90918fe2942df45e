/**
 * The groups page: paged and sorted on the server (the order from the group index, the values
 * read fresh for the page's groups in one call), with pause, resume, limit, weight and rate
 * actions, and the share of the runs each group had over a window the operator chooses
 * (fairness, ../fairness.ts).
 */
import { EMPTY_GROUP } from '../../redis/group-state.js';
import { GROUP_FIELDS } from '../../redis/wire.js';
import { formatDuration } from '../../timers/duration.js';
import type { Page, PageContext } from '../context.js';
import { FAIRNESS_WINDOWS, type FairnessRead, type FairnessWindow, fairnessWindow } from '../fairness.js';
import { waitingOf } from '../group-index.js';
import { groupStatus, groupStatusHtml, liveExecutorsOf } from '../group-status.js';
import { ago, count, duration, type Html, html, name as nameOf, time } from '../html.js';
import { readGroups } from '../shards.js';
import { actionButton, csrfField } from './layout.js';
import { pageOf, pager } from './paging.js';

/** Record fields the page shows in columns of their own; any other field is a setting shown as it is. */
const SHOWN = new Set<string>(GROUP_FIELDS);
const SORTS = ['group', 'waiting', 'nh', 'nl', 'running', 'stuck', 'oldest', 'limit', 'weight', 'rate', 'paused'];
/** Groups the fairness view lists by name (the rest are summed in one row). */
const FAIRNESS_SHOWN = 20;
const WINDOW_LABELS: Record<FairnessWindow, string> = { '1m': 'last minute', '15m': 'last 15 minutes', '1h': 'last hour' };

/** The fairness view: the window's choice (links that keep the page's other parameters), and each group's share of the runs. */
function fairnessSection(ctx: PageContext, f: FairnessRead, now: number): Html {
  const choose = (Object.keys(FAIRNESS_WINDOWS) as FairnessWindow[]).map((w) => {
    const q = new URLSearchParams(ctx.query);
    q.set('fair', w);
    return w === f.window
      ? html`<strong aria-current="true">${WINDOW_LABELS[w]}</strong>`
      : html`<a href="${ctx.base}/groups?${q}" data-fair="${w}">${WINDOW_LABELS[w]}</a>`;
  });
  const shares = [...f.shares.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const top = shares.slice(0, FAIRNESS_SHOWN);
  const rest = shares.slice(FAIRNESS_SHOWN).reduce((n, [, k]) => n + k, 0);
  const pct = (n: number) => `${((100 * n) / f.runs).toFixed(1)}%`;
  return html`<section class="fairness" data-window="${f.window}"><h2>Fairness: share of the ${count(f.runs)} runs that ended in the last <span title="since ${time(f.since)}">${duration(now - f.since)}</span></h2>
<p class="windows">${choose.map((c, i) => html`${i ? ' · ' : ''}${c}`)}</p>
${
  f.runs === 0
    ? html`<p class="empty">No run ended in the ${WINDOW_LABELS[f.window]}.</p>`
    : html`<table><tbody>${top.map(
        ([group, n]) =>
          html`<tr data-share="${group}"><td class="name">${nameOf(group)}</td><td class="bar"><meter min="0" max="${f.runs}" value="${n}"></meter></td><td class="num">${pct(n)}</td><td class="num">${count(n)}</td></tr>`,
      )}${rest ? html`<tr><td>${count(shares.length - top.length)} other groups</td><td class="bar"><meter min="0" max="${f.runs}" value="${rest}"></meter></td><td class="num">${pct(rest)}</td><td class="num">${count(rest)}</td></tr>` : ''}</tbody></table>`
}${f.complete ? '' : html`<p class="muted">Too many groups ran in this window to read them all: the shares are those of the groups read.</p>`}</section>`;
}

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
  const window = fairnessWindow(ctx.query.get('fair'));
  let read = await readGroups(ctx.q.live, names);
  // Groups with runs and nothing waiting are listed from the runs the read found: when those
  // changed the page's groups, the page is read again (seldom: only as such groups come and go).
  if (index.setRunning(read.running) && !find) {
    const again = index.page(sort, desc, offset, limit);
    if (again.join('\n') !== names.join('\n')) {
      names = again;
      read = await readGroups(ctx.q.live, names);
    }
  }
  names.forEach((n, i) => {
    index.update(
      n,
      read.byShard.map((rows) => rows[i]),
    );
  });
  const now = read.now;
  const fair = await ctx.q.live.fairness.read(window, now);
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
<td class="name">${nameOf(name)}</td>
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
${fairnessSection(ctx, fair, now)}`,
  };
}

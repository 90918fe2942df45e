/** The frame around every page: head, navigation, queue switcher, live job counts. */
import type { Page, PageContext } from '../context.js';
import { type Html, html } from '../html.js';
import { stateHelp } from '../state-help.js';
import { stateCounts } from './overview.js';

const NAV: Array<[Page['nav'], string, string]> = [
  ['overview', '/', 'Overview'],
  ['groups', '/groups', 'Groups'],
  ['jobs', '/jobs', 'Jobs'],
  ['executors', '/executors', 'Executors'],
  ['periodic', '/periodic', 'Periodic'],
  ['redis', '/redis', 'Redis'],
];

/** A hidden CSRF field for an action form (filled in by the page script in live updates). */
export function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;
}

/** A POST form with one button, for an action; nothing in read-only mode. */
export function actionButton(
  ctx: PageContext,
  action: string,
  label: string,
  fields: Record<string, string> = {},
  confirm?: string,
): Html {
  if (ctx.readOnly) return html``;
  return html`<form method="post" action="${ctx.base}/actions/${action}" class="inline"${confirm ? html` data-confirm="${confirm}"` : ''}>${csrfField(ctx)}${Object.entries(
    fields,
  ).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}<input type="hidden" name="return" value="${ctx.base}${ctx.path}${ctx.query.size ? `?${ctx.query}` : ''}"><button type="submit" data-action="${action}">${label}</button></form>`;
}

/** The whole page. */
export function layout(ctx: PageContext, page: Page, flash?: string): Html {
  const counts = ctx.q.live.tick?.counts ?? {};
  const view = `${ctx.path}${ctx.query.size ? `?${ctx.query}` : ''}`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf" content="${ctx.csrf}">
<link rel="icon" href="data:,">
<title>${page.title} · ${ctx.q.name} · Rota</title>
<link rel="stylesheet" href="${ctx.root}/assets/uPlot.min.css">
<link rel="stylesheet" href="${ctx.root}/assets/style.css">
<script src="${ctx.root}/assets/uPlot.iife.min.js" defer></script>
<script src="${ctx.root}/assets/client.js" defer></script>
</head>
<body data-live="${ctx.base}/live?view=${encodeURIComponent(view)}">
<header>
<a class="brand" href="${ctx.root}/">Rota</a>
${ctx.queues.length > 1 ? html`<nav class="queues">${ctx.queues.map((name) => html`<a href="${ctx.root}/q/${encodeURIComponent(name)}/"${name === ctx.q.name ? html` class="current"` : ''}>${name}</a>`)}</nav>` : html`<span class="queue">${ctx.q.name}</span>`}
<nav class="pages">${NAV.map(([id, path, label]) => html`<a href="${ctx.base}${path}"${id === page.nav ? html` class="current"` : ''}>${label}</a>`)}</nav>
<span class="counts">${stateCounts(counts).map(([state, n]) => html`<span class="state state-${state}" title="${stateHelp(state)}">${state} <b data-count="${state}">${n}</b></span>`)}</span>
${ctx.readOnly ? html`<span class="readonly">read-only</span>` : ''}
<span class="live-status" id="live-status" title="live updates">●</span>
</header>
${flash ? html`<p class="flash">${flash}</p>` : ''}
<main id="main">${page.main}</main>
</body>
</html>`;
}

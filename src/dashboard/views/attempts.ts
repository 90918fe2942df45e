/** A job's attempts on its page: one row a run, newest first (start, executor, end, outcome, error). */
import type { Attempt } from '../../queue/job.js';
import { duration, type Html, html, time } from '../html.js';

/** The table of `attempts` (the first line of each error, the whole of it on hover). */
export function attemptsTable(attempts: readonly Attempt[]): Html {
  if (attempts.length === 0) return html`<p class="empty">No run yet.</p>`;
  return html`<table class="attempts"><thead><tr><th>#</th><th>started</th><th>executor</th><th>ended</th><th>ran</th><th>outcome</th><th>error</th></tr></thead>
<tbody>${attempts.map((a, i) => {
    const ran = a.started !== undefined && a.finished !== undefined ? duration(a.finished - a.started) : '–';
    return html`<tr><td class="num">${String(attempts.length - i)}</td><td>${a.started !== undefined ? time(a.started) : '–'}</td><td class="mono">${a.executor ?? '–'}</td><td>${a.finished !== undefined ? time(a.finished) : '–'}</td><td class="num">${ran}</td><td><span class="state state-${a.outcome}">${a.outcome}</span></td><td class="error" title="${a.error ?? ''}">${a.error ? a.error.split('\n')[0] : ''}</td></tr>`;
  })}</tbody></table>`;
}

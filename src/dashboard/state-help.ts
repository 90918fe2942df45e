/**
 * What each job state means, where the dashboard shows it (a title, and a legend): the names
 * come from the design, and two of them read otherwise to users of other queues: `scheduled` is
 * not "in the future" (that is `delayed`), and `stuck` is what Sidekiq and asynqmon call "retry".
 */
import { type Html, html } from './html.js';

const HELP: Record<string, string> = {
  delayed: 'delayed: submitted to run later; becomes waiting at its time',
  'waiting-children':
    'waiting-children: waits for its children (a flow’s parent, a fan-out’s continuation); becomes waiting when the last one ends',
  waiting: 'waiting: ready to run, in its group’s turn',
  scheduled: 'scheduled: taken by an executor, not started yet (not “in the future”: that is delayed)',
  running: 'running: its handler runs',
  stuck: 'stuck: its run failed and it will be retried (what other queues call “retry”); after its last retry it is failed',
  success: 'success: its run ended well',
  failed: 'failed: its run failed for good (no retry left, or a permanent error)',
  cancelled: 'cancelled: cancelled before it ended',
};

/** A state's explanation, for a title ('' for a state the dashboard does not know). */
export function stateHelp(state: string): string {
  return HELP[state] ?? '';
}

/** The legend of the two states whose names mislead: scheduled and stuck. */
export function stateLegend(): Html {
  return html`<p class="legend muted"><b>scheduled</b> = taken by an executor, not started yet · <b>stuck</b> = failed, will be retried (“retry” elsewhere) · <b>delayed</b> = to run at a later time</p>`;
}

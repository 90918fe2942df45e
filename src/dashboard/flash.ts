/**
 * The message an action answers, shown on the page the browser is sent back to: a short-lived
 * cookie set with the action's redirect and cleared by the next page, so that it shows with or
 * without the page script. It is sealed under the process's secret ({@link Access.seal}): a
 * cookie set by another page of the host (cookies ignore ports) is not shown.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Access, cookies } from './security.js';

export const FLASH_COOKIE = 'rota_dashboard_flash';
/** Longest message kept, characters (a longer one is cut). */
const MAX_MESSAGE = 600;
/** How long a message waits for the next page. */
const FLASH_MS = 60_000;

/** Sets and takes the flash message of a dashboard. */
export class Flash {
  constructor(private readonly access: Access) {}

  /** Sets `message` on the response, for the next page (it lasts a minute). */
  set(req: IncomingMessage, res: ServerResponse, message: string): void {
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    this.access.setCookie(req, res, FLASH_COOKIE, this.access.seal('flash', text), FLASH_MS);
  }

  /** The message the request carries, if it is this process's, cleared on the response. */
  take(req: IncomingMessage, res: ServerResponse): string | undefined {
    const value = cookies(req).get(FLASH_COOKIE);
    if (value === undefined) return undefined;
    this.access.setCookie(req, res, FLASH_COOKIE, '', 0);
    return this.access.unseal('flash', value);
  }
}

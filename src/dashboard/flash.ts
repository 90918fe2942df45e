/**
 * The message an action answers, shown on the page the browser is sent back to: a short-lived
 * cookie set with the action's redirect and cleared by the next page, so that it shows with or
 * without the page script. It is signed under a secret of the process: a cookie set by another
 * page of the host (cookies ignore ports) is not shown.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { cookies } from './security.js';

export const FLASH_COOKIE = 'rota_dashboard_flash';
/** Longest message kept, characters (a longer one is cut). */
const MAX_MESSAGE = 600;

/** Sets and takes the flash message of a dashboard. */
export class Flash {
  private readonly key = randomBytes(32);

  constructor(
    private readonly path: string,
    private readonly secure: (req: IncomingMessage) => boolean,
  ) {}

  private mac(message: string): string {
    return createHmac('sha256', this.key).update(message).digest('base64url');
  }

  private cookie(req: IncomingMessage, value: string, maxAge: number): string {
    const secure = this.secure(req) ? '; Secure' : '';
    return `${FLASH_COOKIE}=${encodeURIComponent(value)}; Path=${this.path}; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`;
  }

  /** Sets `message` on the response, for the next page (it lasts a minute). */
  set(req: IncomingMessage, res: ServerResponse, message: string): void {
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    res.appendHeader('set-cookie', this.cookie(req, `${this.mac(text)}.${text}`, 60));
  }

  /** The message the request carries, if it is this process's, cleared on the response. */
  take(req: IncomingMessage, res: ServerResponse): string | undefined {
    const value = cookies(req).get(FLASH_COOKIE);
    if (value === undefined) return undefined;
    res.appendHeader('set-cookie', this.cookie(req, '', 0));
    const at = value.indexOf('.');
    if (at < 0) return undefined;
    const text = value.slice(at + 1);
    const given = Buffer.from(value.slice(0, at));
    const proof = Buffer.from(this.mac(text));
    return given.length === proof.length && timingSafeEqual(given, proof) ? text : undefined;
  }
}

/**
 * The dashboard's protections: the access token (a bearer header, or a cookie set by opening a
 * page once with `?token=`), the CSRF value of action forms (a cookie and a form field that must
 * match, a double submit), and the headers every response carries (a Content-Security-Policy
 * without inline scripts or styles, no framing, no sniffing).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export const AUTH_COOKIE = 'rota_dashboard_auth';
export const CSRF_COOKIE = 'rota_dashboard_csrf';
export const CSRF_FIELD = '_csrf';

/** The headers of every response. */
export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** The cookies of a request. */
export function cookies(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const name = part.slice(0, at).trim();
    try {
      out[name] = decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      // a cookie that is not ours
    }
  }
  return out;
}

/** Compares secrets in constant time. */
export function same(a: string | undefined, b: string): boolean {
  if (a === undefined) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookie(name: string, value: string, path: string): string {
  return `${name}=${encodeURIComponent(value)}; Path=${path}; HttpOnly; SameSite=Strict`;
}

/** Access with a token: checks requests, and logs browsers in with `?token=`. */
export class Access {
  /** The cookie's value: a hash of the token, so that the cookie does not hold the token itself. */
  private readonly proof?: string;

  constructor(
    private readonly token: string | undefined,
    private readonly cookiePath: string,
  ) {
    if (token !== undefined) this.proof = createHash('sha256').update(`rota-dashboard:${token}`).digest('hex');
  }

  /** Whether the request carries the token (always, when there is none). */
  allowed(req: IncomingMessage): boolean {
    if (this.token === undefined) return true;
    const auth = req.headers.authorization;
    if (auth?.startsWith('Bearer ') && same(auth.slice(7), this.token)) return true;
    return same(cookies(req)[AUTH_COOKIE], this.proof!);
  }

  /** For `?token=` with the right token: sets the cookie and answers true (the caller redirects). */
  login(url: URL, res: ServerResponse): boolean {
    const given = url.searchParams.get('token');
    if (this.token === undefined || given === null || !same(given, this.token)) return false;
    res.appendHeader('set-cookie', cookie(AUTH_COOKIE, this.proof!, this.cookiePath));
    return true;
  }

  /** The CSRF value of a browser: its cookie, or a new one (set on the response). */
  csrf(req: IncomingMessage, res: ServerResponse): string {
    const have = cookies(req)[CSRF_COOKIE];
    if (have && /^[0-9a-f]{64}$/.test(have)) return have;
    const fresh = randomBytes(32).toString('hex');
    res.appendHeader('set-cookie', cookie(CSRF_COOKIE, fresh, this.cookiePath));
    return fresh;
  }

  /**
   * Whether a POST passes the CSRF check: its form field equals its cookie, and the request comes
   * from this origin when the browser says where it comes from.
   */
  csrfPasses(req: IncomingMessage, field: string | null): boolean {
    const have = cookies(req)[CSRF_COOKIE];
    if (!have || field === null || !same(field, have)) return false;
    const origin = req.headers.origin;
    if (origin && origin !== 'null') {
      try {
        if (new URL(origin).host !== req.headers.host) return false;
      } catch {
        return false;
      }
    }
    return req.headers['sec-fetch-site'] === undefined || req.headers['sec-fetch-site'] !== 'cross-site';
  }
}

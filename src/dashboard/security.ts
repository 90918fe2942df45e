/**
 * The dashboard's protections: the Host check (./hosts.ts, against DNS rebinding), the access
 * token (a bearer header, or a signed session cookie set by opening a page once with `?token=`),
 * wrong tokens limited per client (the right one always passes), the CSRF value of
 * action forms (an HMAC of the browser's CSRF cookie under a secret of the process, so that a
 * value a page of another origin or port chose never passes), the origin checks of actions, and
 * the headers every response carries (a Content-Security-Policy without inline scripts or styles,
 * no framing, no sniffing).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { HostCheck, hostPort } from './hosts.js';

export const AUTH_COOKIE = 'rota_dashboard_auth';
export const CSRF_COOKIE = 'rota_dashboard_csrf';
export const CSRF_FIELD = '_csrf';

/** How long a session that `?token=` opened lasts, ms. */
export const SESSION_MS = 12 * 3600_000;
/** Wrong tokens a client may send in a window before it is refused for the rest of it. */
export const WRONG_TOKENS = 10;
/** The window of wrong tokens, ms. */
export const WRONG_TOKEN_WINDOW_MS = 60_000;
/** Clients whose wrong tokens are remembered at most (the oldest are forgotten first). */
const CLIENTS_KEPT = 10_000;

/** The headers of every response. */
export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // (not no-referrer: with it a browser sends `Origin: null` on the dashboard's own form posts,
  // and actions refuse a null origin; same-origin sends no referrer to any other origin)
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** The cookies of a request. */
export function cookies(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const name = part.slice(0, at).trim();
    try {
      out.set(name, decodeURIComponent(part.slice(at + 1).trim()));
    } catch {
      // a cookie that is not ours
    }
  }
  return out;
}

/** Compares two strings of the same kind (digests) in constant time. */
function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Options of {@link Access}. */
export interface AccessOptions {
  /** The token every request must carry (none: every request passes). */
  token?: string;
  /** Path of the cookies (the dashboard's root). */
  cookiePath: string;
  /** Trust `X-Forwarded-Proto` and `X-Forwarded-For` (the dashboard is behind a proxy that sets them). */
  trustProxy?: boolean;
  /** Hosts answered besides loopback and the address a request came in on (see HostCheck). */
  allowedHosts?: readonly string[];
}

/** What {@link Access.check} found of a request. */
export type Verdict = 'allowed' | 'denied' | 'limited';

/**
 * Access with a token: checks requests, logs browsers in with `?token=` (a signed session of
 * SESSION_MS), limits wrong tokens per client, and gives and checks CSRF values. Its secret is
 * made when it is built: sessions and CSRF values end with the process.
 */
export class Access {
  private readonly key = randomBytes(32);
  /** The token's HMAC under the key: a token given is compared as its HMAC, whatever its length. */
  private readonly proof?: Buffer;
  private readonly token?: string;
  private readonly cookiePath: string;
  private readonly trustProxy: boolean;
  private readonly hosts: HostCheck;
  /** Wrong tokens per client in the current window. */
  private readonly wrong = new Map<string, { count: number; since: number }>();

  constructor(
    o: AccessOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.token = o.token;
    this.cookiePath = o.cookiePath;
    this.trustProxy = o.trustProxy === true;
    this.hosts = new HostCheck(o.allowedHosts);
    if (o.token !== undefined) this.proof = this.mac('token', o.token);
  }

  private mac(kind: string, value: string): Buffer {
    return createHmac('sha256', this.key).update(`${kind}\n${value}`).digest();
  }

  /** Whether `given` is the token (in constant time, whatever its length). */
  private isToken(given: string): boolean {
    return timingSafeEqual(this.mac('token', given), this.proof!);
  }

  /** The client's address: the socket's, or behind a trusted proxy the last X-Forwarded-For entry. */
  client(req: IncomingMessage): string {
    const forwarded = req.headers['x-forwarded-for'];
    if (this.trustProxy && typeof forwarded === 'string' && forwarded.trim() !== '') {
      return forwarded.split(',').at(-1)!.trim();
    }
    return req.socket.remoteAddress ?? '';
  }

  /** Whether the request came over TLS (to the dashboard, or to the trusted proxy before it). */
  secure(req: IncomingMessage): boolean {
    if ((req.socket as TLSSocket).encrypted) return true;
    const proto = req.headers['x-forwarded-proto'];
    return this.trustProxy && typeof proto === 'string' && proto.split(',')[0].trim().toLowerCase() === 'https';
  }

  /**
   * Whether the request's `Host` names this dashboard (a loopback name or address with its port,
   * the address it came in on, or an allowed host): any other is refused, as DNS rebinding sends it.
   */
  hostAllowed(req: IncomingMessage): boolean {
    return this.hosts.allows(req.headers.host, req, this.secure(req) ? 443 : 80);
  }

  private cookie(req: IncomingMessage, name: string, value: string, maxAgeMs?: number): string {
    const age = maxAgeMs === undefined ? '' : `; Max-Age=${Math.floor(maxAgeMs / 1000)}`;
    const secure = this.secure(req) ? '; Secure' : '';
    return `${name}=${encodeURIComponent(value)}; Path=${this.cookiePath}; HttpOnly; SameSite=Strict${age}${secure}`;
  }

  /** Sets cookie `name` on the response, as the dashboard's own cookies are set (HttpOnly, SameSite=Strict, its path). */
  setCookie(req: IncomingMessage, res: ServerResponse, name: string, value: string, maxAgeMs?: number): void {
    res.appendHeader('set-cookie', this.cookie(req, name, value, maxAgeMs));
  }

  /** `text` signed under the process's secret for `kind`: `<HMAC hex>.<text>`. */
  seal(kind: string, text: string): string {
    return `${this.mac(kind, text).toString('hex')}.${text}`;
  }

  /** The text of a value {@link seal} made for `kind` in this process; undefined for any other value. */
  unseal(kind: string, value: string): string | undefined {
    const at = value.indexOf('.');
    if (at < 0) return undefined;
    const text = value.slice(at + 1);
    return same(value.slice(0, at), this.mac(kind, text).toString('hex')) ? text : undefined;
  }

  /** Whether the client sent too many wrong tokens in the current window. */
  private limited(client: string): boolean {
    const w = this.wrong.get(client);
    if (!w) return false;
    if (this.now() - w.since >= WRONG_TOKEN_WINDOW_MS) {
      this.wrong.delete(client);
      return false;
    }
    return w.count >= WRONG_TOKENS;
  }

  private noteWrong(client: string): void {
    const w = this.wrong.get(client);
    if (w) w.count++;
    else {
      if (this.wrong.size >= CLIENTS_KEPT) this.wrong.delete(this.wrong.keys().next().value!);
      this.wrong.set(client, { count: 1, since: this.now() });
    }
  }

  /** Seconds until a limited client may try again. */
  retryAfter(req: IncomingMessage): number {
    const w = this.wrong.get(this.client(req));
    return w ? Math.max(1, Math.ceil((w.since + WRONG_TOKEN_WINDOW_MS - this.now()) / 1000)) : 1;
  }

  /**
   * Whether the request may pass: it carries the token as a bearer header (`Bearer`, in any case)
   * or a session cookie this process signed and that has not expired (always, without a token).
   * A wrong bearer token counts against the client, and a client over its wrong tokens has them
   * answered `limited`; the right token always passes (a page that makes the operator's browser
   * send wrong ones must not lock the operator out).
   */
  check(req: IncomingMessage): Verdict {
    if (this.token === undefined) return 'allowed';
    if (this.validSession(cookies(req).get(AUTH_COOKIE))) return 'allowed';
    const m = /^bearer[ \t]+(.*)$/i.exec(req.headers.authorization ?? '');
    if (!m) return 'denied';
    return this.tried(req, m[1].trim());
  }

  /** The verdict on a token given: allowed when it is the token; else counted, and `limited` past the client's wrong tokens. */
  private tried(req: IncomingMessage, given: string): Verdict {
    if (this.isToken(given)) return 'allowed';
    const client = this.client(req);
    if (this.limited(client)) return 'limited';
    this.noteWrong(client);
    return 'denied';
  }

  /** A session value: its expiry (ms, base 36), a random id, and their HMAC. */
  private session(): string {
    const body = `${(this.now() + SESSION_MS).toString(36)}.${randomBytes(16).toString('hex')}`;
    return `${body}.${this.mac('session', body).toString('hex')}`;
  }

  private validSession(value: string | undefined): boolean {
    const m = /^([0-9a-z]{1,12})\.([0-9a-f]{32})\.([0-9a-f]{64})$/.exec(value ?? '');
    if (!m) return false;
    const body = `${m[1]}.${m[2]}`;
    return same(m[3], this.mac('session', body).toString('hex')) && Number.parseInt(m[1], 36) > this.now();
  }

  /**
   * For `?token=`: with the right token (always, however many wrong ones the client sent), sets a
   * session cookie and answers 'allowed' (the caller redirects); 'denied' for a wrong one (counted
   * against the client), 'limited' for a wrong one past the client's wrong tokens; undefined when
   * there is no token to check.
   */
  login(url: URL, req: IncomingMessage, res: ServerResponse): Verdict | undefined {
    const given = url.searchParams.get('token');
    if (this.token === undefined || given === null) return undefined;
    const verdict = this.tried(req, given);
    if (verdict !== 'allowed') return verdict;
    res.appendHeader('set-cookie', this.cookie(req, AUTH_COOKIE, this.session(), SESSION_MS));
    return 'allowed';
  }

  /**
   * The CSRF value of a browser for its forms: the HMAC of its CSRF cookie (a random id, set on
   * the response when it has none) under the process's secret.
   */
  csrf(req: IncomingMessage, res: ServerResponse): string {
    let id = cookies(req).get(CSRF_COOKIE);
    if (!id || !/^[0-9a-f]{64}$/.test(id)) {
      id = randomBytes(32).toString('hex');
      res.appendHeader('set-cookie', this.cookie(req, CSRF_COOKIE, id));
    }
    return this.mac('csrf', id).toString('hex');
  }

  /**
   * Whether a POST passes the CSRF check: its form field is the HMAC of its CSRF cookie (a value a
   * page chose for both does not pass), and when the browser says where the request comes from,
   * it is this origin: an `Origin` (not `null`) whose host is one this dashboard answers for (see
   * {@link hostAllowed}) and the request's `Host`, and `Sec-Fetch-Site: same-origin`.
   */
  csrfPasses(req: IncomingMessage, field: string | null): boolean {
    const id = cookies(req).get(CSRF_COOKIE);
    if (!id || field === null || !same(field, this.mac('csrf', id).toString('hex'))) return false;
    const origin = req.headers.origin;
    if (origin !== undefined && !this.originAllowed(req, origin)) return false;
    const site = req.headers['sec-fetch-site'];
    return site === undefined || site === 'same-origin';
  }

  /**
   * Whether an `Origin` is this dashboard's: http or https, a host it answers for, and the host
   * and port of the request's `Host` (the browser writes both from the page's URL, leaving out
   * the scheme's default port).
   */
  private originAllowed(req: IncomingMessage, origin: string): boolean {
    let o: URL;
    try {
      o = new URL(origin);
    } catch {
      // (`null`, from a redirect or an opaque origin, among others)
      return false;
    }
    if (o.protocol !== 'http:' && o.protocol !== 'https:') return false;
    const schemePort = o.protocol === 'https:' ? 443 : 80;
    const from = hostPort(o.host);
    const to = hostPort(req.headers.host);
    if (!from || !to || from.name !== to.name || (from.port ?? schemePort) !== (to.port ?? schemePort)) return false;
    return this.hosts.allows(o.host, req, schemePort);
  }
}

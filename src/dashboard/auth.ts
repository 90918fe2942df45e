/**
 * The gate every request of the dashboard passes first: its `Host` must be one the dashboard
 * answers for (against DNS rebinding), and, when the dashboard has a token, it must carry it (a
 * bearer header, or the session cookie that opening a page with `?token=` sets). The checks are
 * ./security.ts's; this module turns their verdicts into answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Reply } from './respond.js';
import type { Access } from './security.js';

/**
 * Answers a request whose `Host` is not this dashboard's (421), and says so; a request that
 * passes is left alone (false).
 */
export function refuseHost(access: Access, reply: Reply, req: IncomingMessage, res: ServerResponse): boolean {
  if (access.hostAllowed(req)) return false;
  reply.page(
    res,
    421,
    'Misdirected request',
    'This dashboard does not answer for this host name. Its operator lists the names it answers for (--allowed-host, allowedHosts).',
  );
  return true;
}

/**
 * Checks the token of a request for `path` (below the root) of `url`: a `?token=` that is right
 * opens a session and is answered with a redirect to the same page without it (303); a missing or
 * wrong token is refused (401), and too many wrong ones from a client too (429). Gives true when
 * the request was answered, false when it may go on.
 */
export function authenticate(
  access: Access,
  reply: Reply,
  root: string,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  path: string,
): boolean {
  const tooMany = () => {
    res.setHeader('retry-after', String(access.retryAfter(req)));
    reply.page(res, 429, 'Too many wrong tokens', 'Too many wrong tokens from this client: wait a minute and try again.');
    return true;
  };
  const login = access.login(url, req, res);
  if (login === 'limited') return tooMany();
  if (login === 'allowed') {
    url.searchParams.delete('token');
    const rest = url.searchParams.size ? `?${url.searchParams}` : '';
    // (a path of this dashboard: `/.//evil.example` must not send the browser to //evil.example)
    reply.send(res, 303, 'text/plain', '', { location: `${root}/${path.replace(/^[/\\]+/, '')}${rest}` });
    return true;
  }
  const verdict = login === 'denied' ? 'denied' : access.check(req);
  if (verdict === 'limited') return tooMany();
  if (verdict === 'denied') {
    reply.page(
      res,
      401,
      'Token needed',
      'This dashboard needs its token: open it with ?token=<token>, or send Authorization: Bearer <token>.',
    );
    return true;
  }
  return false;
}

/**
 * The dashboard's answers that are not pages of a queue: a body with the security headers every
 * response carries, and the plain page of a refusal or an error (its message is the dashboard's
 * own text, or a RotaError's, which names what is wrong and never a secret).
 */
import type { ServerResponse } from 'node:http';
import { html } from './html.js';
import { SECURITY_HEADERS } from './security.js';

/** How a module of the dashboard answers a request. */
export interface Reply {
  /** Sends `body` with the security headers and `no-store` (unless `extra` says otherwise). */
  send(res: ServerResponse, status: number, type: string, body: string | Buffer, extra?: Record<string, string>): void;
  /** Sends a plain page: a title and a sentence. */
  page(res: ServerResponse, status: number, title: string, message: string): void;
}

/** The replies of a dashboard mounted at `root` (its pages link the style sheet under it). */
export function replies(root: string): Reply {
  const send: Reply['send'] = (res, status, type, body, extra = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': 'no-store', ...extra });
    res.end(body);
  };
  const page: Reply['page'] = (res, status, title, message) =>
    send(
      res,
      status,
      'text/html; charset=utf-8',
      html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · Rota</title><link rel="stylesheet" href="${root}/assets/style.css"></head><body><main><h1>${title}</h1><p>${message}</p></main></body></html>`
        .text,
    );
  return { send, page };
}

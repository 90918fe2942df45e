/**
 * The POST of an action (`/actions/<name>` below a queue's base): refused on a read-only
 * dashboard, for an action that is not one, a form over 64 KiB or one without its CSRF value;
 * otherwise the action runs and the browser is sent back to the page it came from (a path of
 * this queue only), with the action's sentence as the flash message, or the sentence is answered
 * as JSON to a script that asks for it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RotaError } from '../errors.js';
import type { Action } from './bulk.js';
import type { QueueHandle } from './context.js';
import type { Flash } from './flash.js';
import type { Reply } from './respond.js';
import { type Access, CSRF_FIELD } from './security.js';

/** Largest POST body read, bytes. */
export const MAX_BODY = 64 * 1024;
/** A larger body is still read (and dropped) up to this size, so that the 413 reaches the client; past it the connection is closed. */
const MAX_DRAINED = 1024 * 1024;

/** What an action's POST is answered with. */
export interface ActionPost {
  access: Access;
  flash: Flash;
  reply: Reply;
  /** The actions by name (a Map: `constructor` is none). */
  actions: ReadonlyMap<string, Action>;
  readOnly: boolean;
  /** The dashboard's root path. */
  root: string;
}

/** Runs the action `name` of queue `q` (whose pages are at `base`) that `req` posts, and answers. */
export async function postAction(
  p: ActionPost,
  q: QueueHandle,
  base: string,
  name: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { reply } = p;
  if (p.readOnly) return reply.page(res, 403, 'Read-only', 'This dashboard is read-only: it takes no action.');
  const action = p.actions.get(name);
  if (!action) return reply.page(res, 404, 'Not found', 'No such action.');
  const form = await readForm(req);
  if (!form) {
    res.setHeader('connection', 'close');
    return reply.page(res, 413, 'Refused', `The form is larger than ${MAX_BODY} bytes.`);
  }
  if (!p.access.csrfPasses(req, form.get(CSRF_FIELD))) {
    return reply.page(res, 403, 'Refused', 'The form lacks its CSRF value (reload the page and try again).');
  }
  let done: Awaited<ReturnType<Action>>;
  try {
    done = await action(q, form, { root: p.root, base });
  } catch (err) {
    if (err instanceof RotaError) return reply.page(res, 400, 'Refused', err.message);
    throw err;
  }
  // (a confirmation asked first: its page)
  if (typeof done !== 'string') return reply.send(res, 200, 'text/html; charset=utf-8', done.page.text);
  if ((req.headers.accept ?? '').includes('application/json')) {
    return reply.send(res, 200, 'application/json', JSON.stringify({ ok: true, message: String(done) }));
  }
  p.flash.set(req, res, done);
  reply.send(res, 303, 'text/plain', done, { location: returnPath(form.get('return'), base) });
}

/** Where an action sends the browser back: the form's `return` when it is a page of the queue at `base`, else the queue's overview. */
export function returnPath(back: string | null, base: string): string {
  const path = back ?? '';
  return path.startsWith(`${base}/`) && !path.startsWith('//') && !/[\r\n\\]/.test(path) ? path : `${base}/`;
}

/**
 * Reads a url-encoded form of at most MAX_BODY bytes; undefined when it is larger. A larger body
 * is read on and dropped up to MAX_DRAINED bytes, so that the client gets the answer (413) rather
 * than a reset; past that the request is ended.
 */
function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  // A body parser of the application (Express's urlencoded()) read the body first: the form it
  // left on req.body is taken (another body gives no field, and so fails the CSRF check).
  if (req.readableEnded) return Promise.resolve(parsedForm((req as { body?: unknown }).body));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
      else if (size > MAX_DRAINED) {
        req.destroy();
        resolve(undefined);
      }
    });
    req.on('end', () => resolve(size > MAX_BODY ? undefined : new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

/** The form a body parser left on a request: its string fields (a string or buffer body is read as url-encoded). */
function parsedForm(body: unknown): URLSearchParams {
  if (typeof body === 'string' || Buffer.isBuffer(body)) return new URLSearchParams(body.toString('utf8'));
  const form = new URLSearchParams();
  if (body !== null && typeof body === 'object') {
    for (const [k, v] of Object.entries(body)) if (typeof v === 'string') form.append(k, v);
  }
  return form;
}

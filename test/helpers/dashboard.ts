/** Reading a served dashboard in tests: its pages as text, and its actions posted as a form would. */

/** The text of a page's main content, tags removed and spaces folded. */
export function textOf(body: string): string {
  const main = /<main id="main">([\s\S]*)<\/main>/.exec(body)?.[1] ?? body;
  return main
    .replace(/<[^>]*>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');
}

/** A client of the dashboard served at `url()` (read when called: the server may start later). */
export function dashboardClient(url: () => string) {
  /** GETs a page (redirects not followed). */
  const get = async (path: string) => {
    const r = await fetch(new URL(path.replace(/^\//, ''), url()), { redirect: 'manual' });
    return { status: r.status, body: await r.text(), headers: r.headers };
  };
  /** POSTs an action with the page's CSRF value, asking for JSON. */
  const act = async (action: string, fields: Record<string, string>) => {
    const page = await fetch(new URL('groups', url()));
    const csrf = /<meta name="csrf" content="([0-9a-f]+)">/.exec(await page.text())![1];
    const cookie = page.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const r = await fetch(new URL(`actions/${action}`, url()), {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ ...fields, _csrf: csrf }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, accept: 'application/json' },
    });
    return { status: r.status, body: await r.text() };
  };
  return { get, act };
}

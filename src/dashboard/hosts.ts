/**
 * The Host check that keeps DNS rebinding out. A page of another site whose name was made to
 * resolve to the dashboard's address is, to the browser, of its own origin: it can read every
 * answer and post every form. What it cannot change is the `Host` header, which carries its
 * name. So the dashboard answers only a `Host` that names it: a loopback name or address
 * (`localhost`, 127.0.0.0/8, `[::1]`) with the port the request came in on, the address the
 * request came in on written as an address (no name is needed to reach it so), or a host the
 * operator lists (`allowedHosts`).
 */

import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { ValidationError } from '../errors.js';

/** A host and port as a `Host` header or an origin writes them. */
export interface HostPort {
  /** The name or address, lower case; an IPv6 address in brackets, compressed (`[::1]`). */
  name: string;
  /** The port written, if any. */
  port?: number;
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`, and nothing else (no user, path or space). */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/;

/**
 * Reads a `Host` header's value (or an origin's host): the name in its canonical form (as a
 * browser writes it: `127.1` is 127.0.0.1) and the port written; undefined for anything else.
 */
export function hostPort(value: string | undefined): HostPort | undefined {
  const m = HOST_PORT.exec(value ?? '');
  if (!m) return undefined;
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && port > 65_535) return undefined;
  let name: string;
  try {
    name = new URL(`http://${m[1]}`).hostname;
  } catch {
    return undefined;
  }
  return name === '' ? undefined : { name, port };
}

/** Whether a canonical host name is a loopback name or address (localhost, 127.0.0.0/8, [::1]). */
export function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name === '[::1]' || (isIP(name) === 4 && name.startsWith('127.'));
}

/** A socket's local address as a browser would write it in a URL (an IPv4-mapped address as IPv4). */
function localName(address: string | undefined): string | undefined {
  if (!address) return undefined;
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (v4) return v4;
  return hostPort(isIP(address) === 6 ? `[${address}]` : address)?.name;
}

/** A host the operator listed: a name or address, with its port or any; `.example.com` is the name and every name under it. */
interface Listed extends HostPort {
  under: boolean;
}

/**
 * The hosts a dashboard answers for (see the module's comment).
 * @example
 * const hosts = new HostCheck(['dash.example.com', '.internal.example', '10.0.0.5:8080']);
 */
export class HostCheck {
  private readonly listed: Listed[];

  /**
   * @param allowedHosts names or addresses the dashboard also answers for: `name` (any port),
   * `name:port`, `[v6]`, or `.example.com` (that name and every name under it).
   * @throws {ValidationError} (`allowedHosts`) for an entry that is not one of these.
   */
  constructor(allowedHosts: readonly string[] = []) {
    this.listed = allowedHosts.map((entry) => {
      const under = entry.startsWith('.');
      const hp = hostPort(under ? entry.slice(1) : entry);
      if (!hp || (under && hp.name.startsWith('['))) {
        throw new ValidationError(
          'allowedHosts',
          `"${entry}" is not a host name or address with an optional :port (or .name for a domain and its subdomains)`,
        );
      }
      return { ...hp, under };
    });
  }

  /**
   * Whether `host` (a `Host` header's value, or an origin's host) names this dashboard for a
   * request that came in on `req`'s socket. `defaultPort` is the port a host without one means
   * (80, or 443 over TLS).
   */
  allows(host: string | undefined, req: IncomingMessage, defaultPort: number): boolean {
    const hp = hostPort(host);
    if (!hp) return false;
    const port = hp.port ?? defaultPort;
    const ownPort = req.socket?.localPort;
    if (port === ownPort && (isLoopbackName(hp.name) || hp.name === localName(req.socket?.localAddress))) return true;
    return this.listed.some(
      (l) => (l.port === undefined || l.port === port) && (hp.name === l.name || (l.under && hp.name.endsWith(`.${l.name}`))),
    );
  }
}

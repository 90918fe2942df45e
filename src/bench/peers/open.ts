/** Opens a measured system's adapter by name (each adapter is loaded only when it is measured). */
import type { Endpoint, SystemAdapter, SystemName } from './types.js';

/** A peer's package is not installed: the message names the package to install. */
export class PeerMissingError extends Error {
  constructor(readonly system: SystemName) {
    super(`--compare ${system}: the package "${system}" is not installed (npm install ${system}, beside rota)`);
  }
}

/** Loads a peer's adapter module, or throws PeerMissingError when its package is not installed. */
async function load<T>(system: SystemName, importer: () => Promise<T>): Promise<T> {
  try {
    return await importer();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') throw new PeerMissingError(system);
    throw err;
  }
}

export async function openSystem(name: SystemName, at: Endpoint, queue: string): Promise<SystemAdapter> {
  switch (name) {
    case 'rota':
      return (await import('./rota.js')).open(at, queue);
    case 'bullmq':
      return (await load(name, () => import('./bullmq.js'))).open(at, queue);
    case 'groupmq':
      return (await load(name, () => import('./groupmq.js'))).open(at, queue);
  }
}

/** Checks that the peers' packages can be loaded (throws PeerMissingError naming the first missing). */
export async function checkPeers(systems: readonly SystemName[]): Promise<void> {
  for (const s of systems) {
    if (s === 'bullmq') await load(s, () => import('./bullmq.js'));
    if (s === 'groupmq') await load(s, () => import('./groupmq.js'));
  }
}

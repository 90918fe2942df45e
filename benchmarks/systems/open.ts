/** Opens a measured system's adapter by name (each adapter is loaded only when it is measured). */
import type { SystemAdapter, SystemName } from './types.js';

export async function openSystem(name: SystemName, url: string, queue: string): Promise<SystemAdapter> {
  switch (name) {
    case 'rota':
      return (await import('./rota.js')).open(url, queue);
    case 'bullmq':
      return (await import('./bullmq.js')).open(url, queue);
    case 'groupmq':
      return (await import('./groupmq.js')).open(url, queue);
  }
}

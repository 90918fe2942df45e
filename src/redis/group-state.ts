/**
 * A group's state as the Lua scripts keep it: one packed value per group in the queue's `groups`
 * hash (see lua/includes/groupRecord.lua): the fields of GROUP_FIELDS (./wire.ts) in order, as
 * little-endian 32-bit integers.
 */
import type { Redis } from 'ioredis';
import { GROUP_FIELDS as FIELDS } from './wire.js';

/** `running` is kept only while the group has a limit (see countsRunning in lua/includes/groups.lua). */
export type GroupState = Record<(typeof FIELDS)[number], number>;

/** The state of a group the hash does not hold: no jobs, default settings. */
export const EMPTY_GROUP: GroupState = { ...(Object.fromEntries(FIELDS.map((f) => [f, 0])) as GroupState), weight: 1 };

/** Decodes one packed group state. */
export function decodeGroupState(packed: Buffer): GroupState {
  const state = {} as GroupState;
  FIELDS.forEach((field, i) => {
    state[field] = packed.length >= (i + 1) * 4 ? packed.readInt32LE(i * 4) : 0;
  });
  return state;
}

/**
 * Every group of the hash at `key` with its state (HSCAN, a thousand at a time). The field with
 * the empty name is not a group: the scripts write it so that Redis keeps the hash a table
 * (GROUPS_PAD in lua/includes/groups.lua).
 */
export async function readGroupStates(client: Redis, key: string): Promise<Map<string, GroupState>> {
  const out = new Map<string, GroupState>();
  let cursor = '0';
  do {
    const [next, flat] = await client.hscanBuffer(key, cursor, 'COUNT', 1000);
    cursor = next.toString();
    for (let i = 0; i < flat.length; i += 2) {
      if (flat[i].length > 0) out.set(flat[i].toString(), decodeGroupState(flat[i + 1]));
    }
  } while (cursor !== '0');
  return out;
}

/**
 * Flows and chains: a tree of jobs submitted in one atomic step, each parent waiting in
 * `waiting-children` until its children have ended (docs/jobs.md#flows). Checked and packed here;
 * written by flow.lua (the root and the commit) and fanout.lua (the rest, chunk by chunk), the
 * mechanism of a fan-out's committed children (docs/architecture.md#flows).
 */
import { FanOutLimitError, ValidationError } from '../errors.js';
import { checkQueueName } from '../redis/keys.js';
import { type FlowRecord, packFlow, packSubmits } from '../redis/queue-store.js';
import { packStrings } from '../redis/string-array.js';
import { CROSS } from '../redis/wire.js';
import { MAX_FAN_OUT } from './fanout.js';
import type { FailurePolicy } from './job.js';
import { type CheckedSpec, checkSpec, type SubmitSpec } from './validate.js';

/** Most jobs one flow holds, its root included (as many as one fan-out). */
export const MAX_FLOW_JOBS = MAX_FAN_OUT;

/** Most jobs, and bytes of packed args, of one staged chunk (one fanout.lua call). */
const CHUNK = { jobs: 1000, bytes: 1 << 20 };

const POLICIES: ReadonlySet<string> = new Set<FailurePolicy>(['fail', 'ignore', 'remove', 'continue']);

/**
 * A job of a flow: a submit spec without a due time (a flow's job starts when its children have
 * ended), and the children it waits for. A child's group and priority default to its parent's.
 */
export interface FlowSpec<A = unknown> extends Omit<SubmitSpec<A>, 'delay' | 'runAt'> {
  /** The jobs this one waits for: it runs once every one has ended (or as their failure policies say). */
  children?: FlowChildSpec[];
}

/** A job below a flow's root: its id is Rota's (`<parent id>/<index>`), and it has a failure policy. */
export interface FlowChildSpec<A = unknown> extends Omit<FlowSpec<A>, 'id'> {
  /** What its failure (for good, retries used up) does to its parent; default `fail`. */
  onFailure?: FailurePolicy;
  /**
   * The queue it runs in, when not its parent's (docs/jobs.md#flows, "Children in other
   * queues"). Its own children stay in that queue, at most 1,000 jobs (1 MiB of args) below it.
   */
  queue?: string;
}

/** The ids of a submitted flow's jobs, in the shape of the tree. */
export interface FlowNode {
  id: string;
  task: string;
  /** The queue of a child in another queue than its parent's. */
  queue?: string;
  children?: FlowNode[];
}

/** A flow checked and packed: its root's record, and the rest in staged chunks (parents first). */
export interface PackedFlow {
  root: CheckedSpec & { id: string };
  rootRecord: Buffer;
  /** Jobs below the root. */
  total: number;
  chunks: Buffer[];
  tree: FlowNode;
}

/** Where a flow's children in other queues go: the flow's own queue, and each child's queue ref. */
export interface FlowQueues {
  /** The queue the flow is submitted to. */
  own: string;
  /** The ref (`<queue> <shard> <shards>`) of the shard of the flow's root, of group `rootGroup`. */
  ownRef(rootGroup: string): string;
  /** The ref of the shard of queue `queue` that holds child `id` of group `group`. */
  refOf(queue: string, id: string, group: string): string;
}

/** The queues the children of a flow name, other than `own` (for the caller to read their shard counts). */
export function flowQueues(spec: FlowSpec, own: string): Set<string> {
  const out = new Set<string>();
  const visit = (node: unknown, depth: number) => {
    if (typeof node !== 'object' || node === null || depth > 10_000) return;
    const { queue, children } = node as FlowChildSpec;
    if (typeof queue === 'string' && queue !== own) out.add(queue);
    if (Array.isArray(children)) for (const c of children) visit(c, depth + 1);
  };
  visit(spec, 0);
  return out;
}

/**
 * Checks a flow and packs it, writing nothing. `rootId` gives the root its id when it has none.
 * A child in another queue (`queue`, see {@link FlowQueues}) and its subtree go as one staged
 * entry marked CROSS.mark, after the local chunks.
 * @throws {ValidationError} naming the bad field (`children[0].children[2].task`).
 * @throws {FanOutLimitError} past {@link MAX_FLOW_JOBS} jobs.
 */
export function packFlowTree(
  spec: FlowSpec,
  maxArgsBytes: number,
  rootId: (group: string) => string,
  queues?: FlowQueues,
): PackedFlow {
  if (typeof spec !== 'object' || spec === null) throw new ValidationError('flow', 'must be an object');
  let count = 0;
  const check = (
    node: unknown,
    where: string,
    parent: CheckedSpec | null,
  ): { spec: CheckedSpec; kids: unknown[]; policy?: FailurePolicy; queue?: string } => {
    if (typeof node !== 'object' || node === null) throw new ValidationError(where || 'flow', 'must be an object');
    if (++count > MAX_FLOW_JOBS) throw new FanOutLimitError(count, MAX_FLOW_JOBS);
    const { children, onFailure, queue, ...rest } = node as FlowChildSpec & { id?: string };
    const at = (f: string) => (where ? `${where}.${f}` : f);
    if (!parent && 'queue' in (node as object))
      throw new ValidationError('queue', "is a child's option (the root is in the queue submitFlow is called on)");
    if (queue !== undefined) {
      try {
        checkQueueName(queue);
      } catch {
        throw new ValidationError(at('queue'), `"${String(queue)}" is not a valid queue name (1-100 of A-Z a-z 0-9 . _ -)`);
      }
    }
    if (parent && onFailure !== undefined && (typeof onFailure !== 'string' || !POLICIES.has(onFailure))) {
      throw new ValidationError(at('onFailure'), `must be one of ${[...POLICIES].join(', ')}`);
    }
    if (!parent && 'onFailure' in (node as object))
      throw new ValidationError('onFailure', "is a child's option (the root has no parent)");
    if (parent && rest.id !== undefined) throw new ValidationError(at('id'), "is Rota's for a flow's child: <parent id>/<index>");
    if ('delay' in rest || 'runAt' in rest) {
      throw new ValidationError(
        at('delay' in rest ? 'delay' : 'runAt'),
        "cannot be given to a flow's job (it starts when its children end)",
      );
    }
    if (children !== undefined && (!Array.isArray(children) || children.length === 0)) {
      throw new ValidationError(at('children'), 'must be a non-empty array');
    }
    const given = { ...rest } as SubmitSpec;
    if (parent) {
      given.group ??= parent.group;
      given.priority ??= parent.priority;
    }
    return { spec: checkSpec(given, maxArgsBytes, where), kids: children ?? [], policy: onFailure, queue };
  };

  const top = check(spec, '', null);
  if (top.kids.length === 0)
    throw new ValidationError('children', "must be a non-empty array (a flow's root waits for children)");
  const root = top.spec as CheckedSpec & { id: string };
  root.id ??= rootId(root.group);
  const tree: FlowNode = { id: root.id, task: root.task };
  const rootRecord = packFlow([{ ...root, children: top.kids.length }], false);

  // Breadth first: a parent is written before (or in the chunk of) its children. A chunk of jobs
  // with no children and the default policy goes in the plain submit format (as a fan-out's: it
  // costs what a fan-out's chunk costs).
  const packChunk = (jobs: FlowRecord[]) =>
    jobs.some((j) => j.children !== undefined || (j.policy ?? 'fail') !== 'fail')
      ? packFlow(jobs, true)
      : packSubmits(jobs, Infinity).packed;
  const chunks: Buffer[] = [];
  let chunk: FlowRecord[] = [];
  let bytes = 0;
  let total = 0;
  const queue: Array<{ node: FlowNode; spec: CheckedSpec; kids: unknown[]; where: string }> = [
    { node: tree, spec: root, kids: top.kids, where: '' },
  ];
  const remote: Buffer[] = [];
  for (let q = 0; q < queue.length; q++) {
    const { node, spec: parent, kids, where } = queue[q];
    node.children = [];
    kids.forEach((kid, i) => {
      const at = `${where ? `${where}.` : ''}children[${i}]`;
      const c = check(kid, at, parent);
      const id = `${node.id}/${i}`;
      const child: FlowNode = { id, task: c.spec.task };
      node.children!.push(child);
      if (c.queue !== undefined && c.queue !== (queues?.own ?? c.queue)) {
        child.queue = c.queue;
        remote.push(packRemote(c, id, node.id, child, at));
        total++;
        return;
      }
      const record: FlowRecord = {
        ...c.spec,
        id,
        parent: node.id,
        children: c.kids.length > 0 ? c.kids.length : undefined,
        policy: c.policy,
      };
      if (chunk.length === CHUNK.jobs || (chunk.length > 0 && bytes + record.packedArgs.length > CHUNK.bytes)) {
        chunks.push(packChunk(chunk));
        chunk = [];
        bytes = 0;
      }
      chunk.push(record);
      bytes += record.packedArgs.length;
      total++;
      if (c.kids.length > 0) queue.push({ node: child, spec: c.spec, kids: c.kids, where: at });
    });
  }
  if (chunk.length > 0) chunks.push(packChunk(chunk));
  chunks.push(...remote);
  return { root, rootRecord, total, chunks, tree };

  // A child in another queue and its subtree (all in that queue, one chunk at most) as one
  // entry: CROSS.mark, then the child id, its queue's ref, the flow's ref, the child's record and
  // its subtree's chunk (see lua/xsub-in.lua).
  function packRemote(c: ReturnType<typeof check>, id: string, parentId: string, node: FlowNode, where: string): Buffer {
    if (!queues) throw new ValidationError(`${where}.queue`, 'is not known here');
    const records: FlowRecord[] = [];
    let bytes = 0;
    const below: Array<{ node: FlowNode; spec: CheckedSpec; kids: unknown[]; where: string }> = [
      { node, spec: c.spec, kids: c.kids, where },
    ];
    for (let q = 0; q < below.length; q++) {
      const { node: n, spec: parent, kids, where: w } = below[q];
      n.children = kids.length > 0 ? [] : undefined;
      kids.forEach((kid, i) => {
        const at = `${w}.children[${i}]`;
        const k = check(kid, at, parent);
        if (k.queue !== undefined && k.queue !== c.queue) {
          throw new ValidationError(
            `${at}.queue`,
            `must be ${c.queue}: a job below a child in another queue stays in that queue`,
          );
        }
        const kidId = `${n.id}/${i}`;
        const kidNode: FlowNode = { id: kidId, task: k.spec.task };
        n.children!.push(kidNode);
        records.push({
          ...k.spec,
          id: kidId,
          parent: n.id,
          children: k.kids.length > 0 ? k.kids.length : undefined,
          policy: k.policy,
        });
        bytes += k.spec.packedArgs.length;
        if (records.length > CHUNK.jobs || bytes > CHUNK.bytes) {
          throw new ValidationError(where, `has more than ${CHUNK.jobs} jobs (or 1 MiB of args) below it in queue ${c.queue}`);
        }
        if (k.kids.length > 0) below.push({ node: kidNode, spec: k.spec, kids: k.kids, where: at });
      });
    }
    const record = packFlow(
      [{ ...c.spec, id, parent: parentId, children: c.kids.length > 0 ? c.kids.length : undefined, policy: c.policy }],
      false,
    );
    const parts: Array<string | Buffer> = [id, queues.refOf(c.queue!, id, c.spec.group), queues.ownRef(root.group), record];
    if (records.length > 0) parts.push(packFlow(records, true));
    return Buffer.concat([Buffer.from(CROSS.mark), packStrings(parts, Infinity, 'flow')]);
  }
}

/**
 * A chain as a flow: each step waits for the one before it (the last step is the root, the first
 * the deepest leaf), so each reads the previous one's result with `ctx.children()`.
 * @throws {ValidationError} for fewer than two steps, or naming a bad step field (`steps[1].task`).
 */
export function chainFlow(steps: readonly FlowChildSpec[]): FlowSpec {
  if (!Array.isArray(steps) || steps.length < 2) throw new ValidationError('steps', 'must be an array of at least two jobs');
  let flow: FlowChildSpec | undefined;
  steps.forEach((step, i) => {
    if (typeof step !== 'object' || step === null) throw new ValidationError(`steps[${i}]`, 'must be an object');
    if ('children' in step) throw new ValidationError(`steps[${i}].children`, "is not a chain step's option");
    if (i === steps.length - 1 && 'onFailure' in step)
      throw new ValidationError(`steps[${i}].onFailure`, 'is not an option of the last step');
    flow = flow ? { ...step, children: [flow] } : { ...step };
  });
  return flow as FlowSpec;
}

/**
 * Flows and chains: a tree of jobs submitted in one atomic step, each parent waiting in
 * `waiting-children` until its children have ended (docs/jobs.md#flows). Checked and packed here;
 * written by flow.lua (the root and the commit) and fanout.lua (the rest, chunk by chunk), the
 * mechanism of a fan-out's committed children (docs/architecture.md#flows).
 */
import { FanOutLimitError, ValidationError } from '../errors.js';
import { type FlowRecord, packFlow, packSubmits } from '../redis/queue-store.js';
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
}

/** The ids of a submitted flow's jobs, in the shape of the tree. */
export interface FlowNode {
  id: string;
  task: string;
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

/**
 * Checks a flow and packs it, writing nothing. `rootId` gives the root its id when it has none.
 * @throws {ValidationError} naming the bad field (`children[0].children[2].task`).
 * @throws {FanOutLimitError} past {@link MAX_FLOW_JOBS} jobs.
 */
export function packFlowTree(spec: FlowSpec, maxArgsBytes: number, rootId: (group: string) => string): PackedFlow {
  if (typeof spec !== 'object' || spec === null) throw new ValidationError('flow', 'must be an object');
  let count = 0;
  const check = (
    node: unknown,
    where: string,
    parent: CheckedSpec | null,
  ): { spec: CheckedSpec; kids: unknown[]; policy?: FailurePolicy } => {
    if (typeof node !== 'object' || node === null) throw new ValidationError(where || 'flow', 'must be an object');
    if (++count > MAX_FLOW_JOBS) throw new FanOutLimitError(count, MAX_FLOW_JOBS);
    const { children, onFailure, ...rest } = node as FlowChildSpec & { id?: string };
    const at = (f: string) => (where ? `${where}.${f}` : f);
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
    return { spec: checkSpec(given, maxArgsBytes, where), kids: children ?? [], policy: onFailure };
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
  for (let q = 0; q < queue.length; q++) {
    const { node, spec: parent, kids, where } = queue[q];
    node.children = [];
    kids.forEach((kid, i) => {
      const at = `${where ? `${where}.` : ''}children[${i}]`;
      const c = check(kid, at, parent);
      const id = `${node.id}/${i}`;
      const child: FlowNode = { id, task: c.spec.task };
      node.children!.push(child);
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
  return { root, rootRecord, total, chunks, tree };
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

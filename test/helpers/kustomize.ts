/** Builds the Kubernetes manifests (deploy/kubernetes) as `kubectl apply -k` would: `kubectl kustomize`. */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** The manifests' folder: base/, components/, overlays/. */
export const MANIFESTS = join(import.meta.dirname, '../../deploy/kubernetes');

// biome-ignore lint/suspicious/noExplicitAny: manifests are read as plain objects
export type Obj = Record<string, any>;

/**
 * The objects `kubectl kustomize` builds from `folder` (under deploy/kubernetes, or an absolute
 * path), and what it printed on stderr.
 */
export function kustomize(folder: string): { objs: Obj[]; stderr: string } {
  const out = spawnSync('kubectl', ['kustomize', resolve(MANIFESTS, folder)], { encoding: 'utf8' });
  if (out.error) throw new Error(`cannot run kubectl (1.27 or later: its kustomize v5): ${out.error.message}`);
  if (out.status !== 0) {
    throw new Error(`kubectl kustomize ${folder} failed (it needs kubectl 1.27 or later, with kustomize v5):\n${out.stderr}`);
  }
  return { objs: parseAllDocuments(out.stdout).map((d) => d.toJS() as Obj), stderr: out.stderr };
}

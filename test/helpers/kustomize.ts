/** Builds the Kubernetes manifests (deploy/kubernetes) as `kubectl apply -k` would: `kubectl kustomize`. */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** The manifests' folder: base/, components/, overlays/. */
export const MANIFESTS = join(import.meta.dirname, '../../deploy/kubernetes');

// biome-ignore lint/suspicious/noExplicitAny: manifests are read as plain objects
export type Obj = Record<string, any>;

/**
 * The objects `kubectl kustomize` builds from `folder` (under deploy/kubernetes, or an absolute
 * path), and what it printed on stderr; `kubectl` names another kubectl binary.
 */
export function kustomize(folder: string, kubectl = 'kubectl'): { objs: Obj[]; stderr: string } {
  const out = spawnSync(kubectl, ['kustomize', resolve(MANIFESTS, folder)], { encoding: 'utf8' });
  if (out.error) throw new Error(`cannot run kubectl (1.27 or later: its kustomize v5): ${out.error.message}`);
  if (out.status !== 0) {
    throw new Error(`kubectl kustomize ${folder} failed (it needs kubectl 1.27 or later, with kustomize v5):\n${out.stderr}`);
  }
  return { objs: parseAllDocuments(out.stdout).map((d) => d.toJS() as Obj), stderr: out.stderr };
}

/**
 * The kubectl binaries of other versions installed beside the one on the PATH (the Cloud SDK's
 * `kubectl.1.27` ... beside its `kubectl`), by minor version; none on most machines.
 */
export function otherKubectls(): Map<number, string> {
  const found = new Map<number, string>();
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const bin = join(dir, 'kubectl');
    if (!existsSync(bin)) continue;
    const home = dirname(realpathSync(bin));
    for (const name of readdirSync(home)) {
      const minor = /^kubectl\.1\.(\d+)$/.exec(name)?.[1];
      if (minor) found.set(Number(minor), join(home, name));
    }
    break;
  }
  return found;
}

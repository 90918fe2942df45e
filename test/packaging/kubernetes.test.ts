/**
 * The Kubernetes manifests (deploy/kubernetes): the base and each overlay build with kustomize
 * (`kubectl kustomize`, Debian's kubernetes-client), every object they give validates against the
 * Kubernetes (and KEDA) schemas (kubernetes-models), and what docs/kubernetes.md promises of them
 * holds: probes on the health port the command serves, the health and metrics servers bound to the
 * pod's address (they bind 127.0.0.1 unless told otherwise), a grace period past the shutdown timeout,
 * non-root with a read-only root filesystem, two scheduler replicas under a disruption budget,
 * the dashboard's token from the Secret, and the flags each container passes are flags of its
 * command (from `rota <command> --help`).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { rota } from '../helpers/cli.js';

const DIR = join(import.meta.dirname, '../../deploy/kubernetes');

// biome-ignore lint/suspicious/noExplicitAny: manifests are read as plain objects
type Obj = Record<string, any>;

/** The objects `kubectl kustomize` builds from `folder`. */
function build(folder: string): Obj[] {
  const out = execFileSync('kubectl', ['kustomize', join(DIR, folder)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return parseAllDocuments(out).map((d) => d.toJS() as Obj);
}

/** The schema model of `obj`'s apiVersion and kind. */
async function modelOf(obj: Obj): Promise<new (o: Obj) => { validate(): void }> {
  const { apiVersion, kind } = obj;
  const module =
    apiVersion === 'keda.sh/v1alpha1'
      ? await import('@kubernetes-models/keda/keda.sh/v1alpha1')
      : await import(`kubernetes-models/${apiVersion.includes('/') ? apiVersion : `v1`}`);
  const model = (module as Record<string, unknown>)[kind];
  if (typeof model !== 'function') throw new Error(`no schema for ${apiVersion} ${kind}`);
  return model as new (
    o: Obj,
  ) => { validate(): void };
}

const named = (objs: Obj[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name)!;
const argValue = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

describe('Kubernetes manifests', () => {
  const builds = { base: build('base'), keda: build('overlays/keda'), readOnly: build('overlays/read-only-dashboard') };

  it('build, and every object validates against its schema', async () => {
    for (const [name, objs] of Object.entries(builds)) {
      expect(objs.length, name).toBeGreaterThan(0);
      for (const obj of objs) {
        const Model = await modelOf(obj);
        expect(() => new Model(obj).validate(), `${name}: ${obj.kind} ${obj.metadata.name}`).not.toThrow();
      }
    }
  });

  it('run each container as a pod should: probes on the health port, non-root, read-only root, resources', () => {
    for (const d of builds.base.filter((o) => o.kind === 'Deployment')) {
      const pod = d.spec.template.spec;
      expect(pod.securityContext.runAsNonRoot, d.metadata.name).toBe(true);
      for (const c of pod.containers) {
        const where = `${d.metadata.name}/${c.name}`;
        const health = Number(argValue(c.args, '--health-port'));
        const port = c.ports.find((p: Obj) => p.name === 'health').containerPort;
        expect(port, where).toBe(health);
        // (the kubelet probes the pod's address, which a server bound to loopback does not answer)
        expect(argValue(c.args, '--health-host'), where).toBe('0.0.0.0');
        if (c.args.includes('--metrics-port')) {
          // (and Prometheus scrapes it there)
          expect(argValue(c.args, '--metrics-host'), where).toBe('0.0.0.0');
          const metrics = c.ports.find((p: Obj) => p.name === 'metrics').containerPort;
          expect(metrics, where).toBe(Number(argValue(c.args, '--metrics-port')));
          expect(d.spec.template.metadata.annotations?.['prometheus.io/port'] ?? String(metrics), where).toBe(String(metrics));
        }
        expect(c.readinessProbe.httpGet, where).toMatchObject({ path: '/readyz', port: 'health' });
        expect(c.livenessProbe.httpGet, where).toMatchObject({ path: '/livez', port: 'health' });
        expect(c.securityContext, where).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
        expect(c.resources.requests.memory, where).toBeDefined();
        expect(c.env.find((e: Obj) => e.name === 'REDIS_URL').valueFrom.secretKeyRef, where).toMatchObject({ name: 'rota' });
      }
    }
  });

  it('let running jobs finish before the kill, keep two scheduler replicas, and take the dashboard token from the Secret', () => {
    const worker = named(builds.base, 'Deployment', 'rota-worker');
    const timeout = Number(argValue(worker.spec.template.spec.containers[0].args, '--shutdown-timeout'));
    expect(worker.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(timeout);
    const scheduler = named(builds.base, 'Deployment', 'rota-scheduler');
    expect(scheduler.spec.replicas).toBe(2);
    const pdb = named(builds.base, 'PodDisruptionBudget', 'rota-scheduler');
    expect(pdb.spec.selector.matchLabels).toEqual(scheduler.spec.selector.matchLabels);
    const dashboard = named(builds.base, 'Deployment', 'rota-dashboard').spec.template.spec.containers[0];
    expect(dashboard.env.find((e: Obj) => e.name === 'ROTA_DASHBOARD_TOKEN').valueFrom.secretKeyRef).toEqual({
      name: 'rota',
      key: 'dashboard-token',
    });
    expect(dashboard.args).not.toContain('--read-only');
    const service = named(builds.base, 'Service', 'rota-dashboard');
    expect(service.spec.selector).toEqual(named(builds.base, 'Deployment', 'rota-dashboard').spec.selector.matchLabels);
    const readOnly = named(builds.readOnly, 'Deployment', 'rota-dashboard').spec.template.spec.containers[0];
    expect(readOnly.args).toContain('--read-only');
  });

  it('scale the executors with KEDA from zero on runnable jobs, the Deployment leaving the count to it', () => {
    const scaled = named(builds.keda, 'ScaledObject', 'rota-worker');
    expect(scaled.spec).toMatchObject({ scaleTargetRef: { name: 'rota-worker' }, minReplicaCount: 0 });
    expect(scaled.spec.triggers[0]).toMatchObject({ type: 'prometheus', metadata: { activationThreshold: '0' } });
    expect(scaled.spec.triggers[0].metadata.query).toMatch(/rota_queue_runnable_jobs/);
    expect(named(builds.keda, 'Deployment', 'rota-worker').spec.replicas).toBeUndefined();
  });

  it('pass only flags their commands have', async () => {
    for (const d of builds.base.filter((o) => o.kind === 'Deployment')) {
      const [command, ...args] = d.spec.template.spec.containers[0].args as string[];
      const help = await rota([command, '--help']);
      for (const flag of args.filter((a) => a.startsWith('--'))) expect(help.stdout, `${command} ${flag}`).toContain(flag);
    }
  });
});

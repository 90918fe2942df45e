/**
 * The Kubernetes manifests (deploy/kubernetes): the base and every overlay build with kustomize
 * (`kubectl kustomize`, kustomize v5) and print nothing on stderr (no deprecation warning), every
 * object they give validates against the Kubernetes, KEDA and Prometheus Operator schemas
 * (kubernetes-models), and what docs/kubernetes.md promises of them holds: selectors of fixed
 * names only (a Deployment's selector cannot change once applied), the same in every overlay;
 * probes on the health port the command serves, with the timing docs/operations.md gives; the
 * health and metrics servers bound to the pod's address (they bind 127.0.0.1 unless told
 * otherwise); a grace period past the shutdown timeout; non-root with a read-only root filesystem
 * and no service-account token; disruption budgets and topology spread for executors and
 * schedulers; a PodMonitor that selects every pod serving metrics; and the flags each container
 * passes are flags of its command (from `rota <command> --help`). The ScaledObject that
 * docs/kubernetes.md shows is the one shipped, and the overlays of one's own it gives build to
 * what it says. The KEDA query itself runs against a real Prometheus in
 * test/packaging/keda-query.test.ts.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { rota } from '../helpers/cli.js';
import { kustomize, MANIFESTS, type Obj, otherKubectls } from '../helpers/kustomize.js';

/** The schema model of `obj`'s apiVersion and kind. */
async function modelOf(obj: Obj): Promise<new (o: Obj) => { validate(): void }> {
  const { apiVersion, kind } = obj;
  const [group] = apiVersion.split('/');
  const core = `kubernetes-models/${apiVersion.includes('/') ? apiVersion : 'v1'}`;
  const module =
    group === 'keda.sh'
      ? await import('@kubernetes-models/keda/keda.sh/v1alpha1')
      : group === 'monitoring.coreos.com'
        ? await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1')
        : await import(core);
  const model = (module as Record<string, unknown>)[kind];
  if (typeof model !== 'function') throw new Error(`no schema for ${apiVersion} ${kind}`);
  return model as new (
    o: Obj,
  ) => { validate(): void };
}

const named = (objs: Obj[], kind: string, name: string) => {
  const found = objs.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
};
const argValue = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

/** Whether a label selector (matchLabels and matchExpressions, In and NotIn) selects `labels`. */
function selects(selector: Obj, labels: Record<string, string>): boolean {
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every((e: Obj) => {
    if (e.operator === 'In') return e.values.includes(labels[e.key]);
    if (e.operator === 'NotIn') return !e.values.includes(labels[e.key]);
    throw new Error(`selector operator ${e.operator} not handled here`);
  });
  return byLabels && byExpressions;
}

/** Every label selector an object carries, with where it is. */
function selectorsOf(obj: Obj): Array<[string, Obj]> {
  const where = `${obj.kind} ${obj.metadata.name}`;
  const out: Array<[string, Obj]> = [];
  if (obj.kind === 'Service') out.push([`${where} spec.selector`, { matchLabels: obj.spec.selector }]);
  else if (obj.spec?.selector) out.push([`${where} spec.selector`, obj.spec.selector]);
  for (const [i, c] of (obj.spec?.template?.spec?.topologySpreadConstraints ?? []).entries()) {
    out.push([`${where} topologySpreadConstraints[${i}]`, c.labelSelector]);
  }
  return out;
}

const FOLDERS = ['base', ...readdirSync(join(MANIFESTS, 'overlays')).map((o) => `overlays/${o}`)];
/** The labels the base puts on every object and pod (its `labels`). */
const ADDED_LABELS = (parse(readFileSync(join(MANIFESTS, 'base/kustomization.yaml'), 'utf8')).labels as Obj[]).flatMap((l) =>
  Object.keys(l.pairs),
);
/** The yaml blocks of a doc, unindented. */
function yamlBlocks(doc: string): string[] {
  const text = readFileSync(join(import.meta.dirname, '../../docs', doc), 'utf8');
  return [...text.matchAll(/^( *)```yaml\n([\s\S]*?)^\1```/gm)].map(([, indent, body]) =>
    body!.replaceAll(new RegExp(`^${indent}`, 'gm'), ''),
  );
}

/**
 * What an overlay of a user's own gives: `kustomization` (a doc's, naming the manifests as
 * `../../deploy/kubernetes/...`) built in a folder two below one that holds the repository's deploy/.
 */
function buildOwn(kustomization: string): { objs: Obj[]; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rota-overlay-'));
  try {
    symlinkSync(join(MANIFESTS, '..'), join(dir, 'deploy'));
    mkdirSync(join(dir, 'mine', 'overlay'), { recursive: true });
    writeFileSync(join(dir, 'mine', 'overlay', 'kustomization.yaml'), kustomization);
    return kustomize(join(dir, 'mine', 'overlay'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The probes docs/operations.md gives (its yaml block of startupProbe, readinessProbe, livenessProbe). */
const DOC_PROBES = (() => {
  const doc = readFileSync(join(import.meta.dirname, '../../docs/operations.md'), 'utf8');
  const block = /```yaml\n(startupProbe:[\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/operations.md gives no probes block');
  return parse(block) as Obj;
})();

describe('Kubernetes manifests', () => {
  const builds = Object.fromEntries(FOLDERS.map((f) => [f, kustomize(f)]));
  const base = builds.base.objs;
  const keda = builds['overlays/keda'].objs;

  it('build, each folder with nothing on stderr, and every object validates against its schema', async () => {
    expect(FOLDERS).toEqual(
      expect.arrayContaining(['overlays/keda', 'overlays/prometheus-operator', 'overlays/read-only-dashboard']),
    );
    for (const [folder, { objs, stderr }] of Object.entries(builds)) {
      expect(stderr, folder).toBe('');
      expect(objs.length, folder).toBeGreaterThan(0);
      for (const obj of objs) {
        const Model = await modelOf(obj);
        expect(() => new Model(obj).validate(), `${folder}: ${obj.kind} ${obj.metadata.name}`).not.toThrow();
        expect(obj.metadata.labels?.['app.kubernetes.io/part-of'], `${folder}: ${obj.kind} ${obj.metadata.name}`).toBe('rota');
      }
    }
  });

  it('build the same with the oldest kubectl they support, 1.27, and the newest, where installed beside kubectl', () => {
    const others = otherKubectls();
    const minors = [...others.keys()].filter((m) => m >= 27).sort((a, b) => a - b);
    for (const minor of new Set([minors[0], minors.at(-1)].filter((m) => m !== undefined))) {
      for (const folder of FOLDERS) {
        expect(kustomize(folder, others.get(minor)), `kubectl 1.${minor}: ${folder}`).toEqual(builds[folder]);
      }
    }
  });

  it('select by fixed names only, the same in every overlay, each selecting its own pods', () => {
    expect(ADDED_LABELS).toContain('app.kubernetes.io/part-of');
    for (const [folder, { objs }] of Object.entries(builds)) {
      for (const obj of objs) {
        for (const [where, selector] of selectorsOf(obj)) {
          const keys = [...Object.keys(selector.matchLabels ?? {}), ...(selector.matchExpressions ?? []).map((e: Obj) => e.key)];
          expect(keys, `${folder}: ${where}`).toEqual(['app.kubernetes.io/name']);
          for (const added of ADDED_LABELS) expect(keys, `${folder}: ${where}`).not.toContain(added);
        }
      }
      for (const d of objs.filter((o) => o.kind === 'Deployment')) {
        expect(d.spec.selector, `${folder}: ${d.metadata.name}`).toEqual(
          named(base, 'Deployment', d.metadata.name).spec.selector,
        );
        const pods = d.spec.template.metadata.labels;
        expect(selects(d.spec.selector, pods), `${folder}: ${d.metadata.name}`).toBe(true);
        // (the pods carry the added labels too: a query or a NetworkPolicy can use them)
        for (const added of ADDED_LABELS) expect(pods[added], `${folder}: ${d.metadata.name}`).toBeDefined();
        for (const [where, selector] of selectorsOf(d)) expect(selects(selector, pods), `${folder}: ${where}`).toBe(true);
      }
    }
  });

  it('run each container as a pod should: probes on the health port with the documented timing, non-root, read-only root, no token, resources', () => {
    expect(Object.keys(DOC_PROBES)).toEqual(['startupProbe', 'readinessProbe', 'livenessProbe']);
    const account = named(base, 'ServiceAccount', 'rota');
    expect(account.automountServiceAccountToken).toBe(false);
    const deployments = base.filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(['rota-dashboard', 'rota-scheduler', 'rota-worker']);
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      expect(pod.securityContext.runAsNonRoot, d.metadata.name).toBe(true);
      expect(pod.serviceAccountName, d.metadata.name).toBe('rota');
      expect(pod.automountServiceAccountToken, d.metadata.name).toBe(false);
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
          expect(d.spec.template.metadata.annotations?.['prometheus.io/scrape'], where).toBe('true');
          expect(d.spec.template.metadata.annotations?.['prometheus.io/port'], where).toBe(String(metrics));
        }
        for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
          expect(c[probe], `${where} ${probe}`).toEqual(DOC_PROBES[probe]);
        }
        expect(c.securityContext, where).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
        expect(c.resources.requests.memory, where).toBeDefined();
        expect(c.env.find((e: Obj) => e.name === 'REDIS_URL').valueFrom.secretKeyRef, where).toMatchObject({ name: 'rota' });
      }
    }
  });

  it('let running jobs finish before the kill, and take the dashboard token from the Secret', () => {
    const worker = named(base, 'Deployment', 'rota-worker');
    const timeout = Number(argValue(worker.spec.template.spec.containers[0].args, '--shutdown-timeout'));
    expect(worker.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(timeout);
    const dashboard = named(base, 'Deployment', 'rota-dashboard').spec.template.spec.containers[0];
    expect(dashboard.env.find((e: Obj) => e.name === 'ROTA_DASHBOARD_TOKEN').valueFrom.secretKeyRef).toEqual({
      name: 'rota',
      key: 'dashboard-token',
    });
    expect(dashboard.args).not.toContain('--read-only');
    const service = named(base, 'Service', 'rota-dashboard');
    expect(service.spec.selector).toEqual(named(base, 'Deployment', 'rota-dashboard').spec.selector.matchLabels);
    const readOnly = named(builds['overlays/read-only-dashboard'].objs, 'Deployment', 'rota-dashboard').spec.template.spec
      .containers[0];
    expect(readOnly.args).toContain('--read-only');
  });

  it('keep executors and two scheduler replicas through disruptions: budgets, and replicas spread over nodes', () => {
    const scheduler = named(base, 'Deployment', 'rota-scheduler');
    expect(scheduler.spec.replicas).toBe(2);
    const spread = (d: Obj, key: string) =>
      (d.spec.template.spec.topologySpreadConstraints as Obj[]).find((c) => c.topologyKey === key);
    // two replicas never share a node while another has room
    expect(spread(scheduler, 'kubernetes.io/hostname')).toMatchObject({ maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule' });
    expect(spread(scheduler, 'topology.kubernetes.io/zone')).toMatchObject({ whenUnsatisfiable: 'ScheduleAnyway' });
    const worker = named(base, 'Deployment', 'rota-worker');
    for (const key of ['kubernetes.io/hostname', 'topology.kubernetes.io/zone']) {
      expect(spread(worker, key), key).toMatchObject({ maxSkew: 1, whenUnsatisfiable: 'ScheduleAnyway' });
    }
    for (const d of [scheduler, worker]) {
      for (const c of d.spec.template.spec.topologySpreadConstraints) expect(c.matchLabelKeys).toEqual(['pod-template-hash']);
    }
    const schedulerBudget = named(base, 'PodDisruptionBudget', 'rota-scheduler');
    expect(schedulerBudget.spec.minAvailable).toBe(1);
    expect(schedulerBudget.spec.selector).toEqual(scheduler.spec.selector);
    const workerBudget = named(base, 'PodDisruptionBudget', 'rota-worker');
    expect(workerBudget.spec.maxUnavailable).toBe(1);
    expect(workerBudget.spec.selector).toEqual(worker.spec.selector);
  });

  it('scrape every pod serving metrics with the Prometheus Operator, a PodMonitor on their metrics port', () => {
    for (const folder of ['overlays/prometheus-operator', 'overlays/keda']) {
      const objs = builds[folder].objs;
      const monitor = named(objs, 'PodMonitor', 'rota');
      const [endpoint, ...others] = monitor.spec.podMetricsEndpoints;
      expect(others, folder).toEqual([]);
      expect(endpoint, folder).toMatchObject({ port: 'metrics', path: '/metrics' });
      for (const d of objs.filter((o) => o.kind === 'Deployment')) {
        const serves = d.spec.template.spec.containers.some((c: Obj) => c.ports.some((p: Obj) => p.name === endpoint.port));
        expect(selects(monitor.spec.selector, d.spec.template.metadata.labels), `${folder}: ${d.metadata.name}`).toBe(serves);
      }
      expect(objs.filter((o) => o.kind === 'Deployment').length, folder).toBe(3);
    }
    expect(base.some((o) => o.kind === 'PodMonitor')).toBe(false);
  });

  it('scale the executors with KEDA from zero on the backlog, asking the Operator’s Prometheus, the Deployment leaving the count to it', () => {
    const scaled = named(keda, 'ScaledObject', 'rota-worker');
    expect(scaled.spec).toMatchObject({ scaleTargetRef: { name: 'rota-worker' }, minReplicaCount: 0 });
    const [trigger] = scaled.spec.triggers;
    expect(trigger).toMatchObject({ type: 'prometheus', metadata: { activationThreshold: '0' } });
    expect(new URL(trigger.metadata.serverAddress).hostname).toMatch(/^prometheus-operated\./);
    // (one pod per --concurrency of jobs)
    const worker = named(keda, 'Deployment', 'rota-worker').spec.template.spec.containers[0];
    expect(trigger.metadata.threshold).toBe(argValue(worker.args, '--concurrency'));
    expect(named(keda, 'Deployment', 'rota-worker').spec.replicas).toBeUndefined();
    expect(named(base, 'Deployment', 'rota-worker').spec.replicas).toBe(2);
  });

  it('are described as they are in docs/kubernetes.md, and its overlays of one’s own build to what it says', async () => {
    const blocks = yamlBlocks('kubernetes.md');
    const shipped = parse(readFileSync(join(MANIFESTS, 'components/keda/scaledobject.yaml'), 'utf8'));
    const documented = blocks.map((b) => parse(b)).filter((o) => o?.kind === 'ScaledObject');
    expect(documented).toEqual([shipped]);

    const own = blocks.filter((b) => /^kind: Kustomization$/m.test(b)).map(buildOwn);
    expect(own).toHaveLength(2);
    for (const { objs, stderr } of own) {
      expect(stderr).toBe('');
      for (const obj of objs) {
        const Model = await modelOf(obj);
        expect(() => new Model(obj).validate(), `${obj.kind} ${obj.metadata.name}`).not.toThrow();
      }
    }
    // kube-prometheus-stack's: the PodMonitor labelled with the release, its selector as shipped
    const [labelled, annotated] = own.map((b) => b.objs);
    const monitor = named(labelled!, 'PodMonitor', 'rota');
    expect(monitor.metadata.labels.release).toBe('kube-prometheus-stack');
    expect(monitor.spec).toEqual(named(builds['overlays/keda'].objs, 'PodMonitor', 'rota').spec);
    // the annotation path's: no PodMonitor, the trigger asking another Prometheus about queue emails
    expect(annotated!.some((o) => o.kind === 'PodMonitor')).toBe(false);
    const trigger = named(annotated!, 'ScaledObject', 'rota-worker').spec.triggers[0].metadata;
    expect(trigger.serverAddress).toBe('http://prometheus-server.monitoring.svc');
    expect(trigger.query.trimEnd()).toBe(
      shipped.spec.triggers[0].metadata.query.replaceAll('queue="default"', 'queue="emails"').trimEnd(),
    );
  });

  it('pass only flags their commands have', async () => {
    for (const d of base.filter((o) => o.kind === 'Deployment')) {
      const [command, ...args] = d.spec.template.spec.containers[0].args as string[];
      const help = await rota([command, '--help']);
      for (const flag of args.filter((a) => a.startsWith('--'))) expect(help.stdout, `${command} ${flag}`).toContain(flag);
    }
  });
});

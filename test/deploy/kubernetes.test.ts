/**
 * deploy/kubernetes, checked offline: every object against Kubernetes' own OpenAPI schema
 * (kubernetes-models: wrong types and missing fields are errors), the pod settings the jails need
 * and the ones they must not get, and the kustomization rendered by kubectl where it is installed
 * (kubectl apply --dry-run=client needs an API server, even with --validate=false).
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Deployment } from 'kubernetes-models/apps/v1'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { Secret, Service } from 'kubernetes-models/v1'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'

const DIR = resolve('deploy/kubernetes')
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/Secret': Secret,
  'v1/Service': Service,
}

interface Manifest {
  apiVersion: string
  kind: string
  [key: string]: unknown
}

function manifests(): Manifest[] {
  return readdirSync(DIR)
    .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
    .flatMap((name) =>
      parseAllDocuments(readFileSync(join(DIR, name), 'utf8')).map((doc) => doc.toJS() as Manifest),
    )
}

function validate(manifest: Manifest) {
  const Model = MODELS[`${manifest.apiVersion}/${manifest.kind}`]
  if (!Model) throw new Error(`no schema for ${manifest.apiVersion} ${manifest.kind}`)
  new Model(manifest as never).validate()
}

const deployment = () => manifests().find((m) => m.kind === 'Deployment') as unknown as Deployment

describe('deploy/kubernetes', () => {
  it('holds a Deployment, a Service, a PodDisruptionBudget and a Secret, each valid by the schema', () => {
    const found = manifests()
    expect(found.map((m) => m.kind).sort()).toEqual([
      'Deployment',
      'PodDisruptionBudget',
      'Secret',
      'Service',
    ])
    for (const manifest of found) expect(() => validate(manifest), manifest.kind).not.toThrow()
  })

  it('is checked against the schema: a wrong type or a missing required field fails', () => {
    // (kubernetes-models does not reject unknown fields: a misspelt one passes, as with kubectl's
    // --validate=false; the next test checks the fields that matter by name.)
    const mistyped = structuredClone(deployment()) as unknown as Manifest & { spec: Record<string, unknown> }
    mistyped.spec.replicas = 'two'
    expect(() => validate(mistyped)).toThrow()
    const headless = structuredClone(deployment()) as unknown as Manifest & { spec: Record<string, unknown> }
    delete headless.spec.selector
    expect(() => validate(headless)).toThrow()
  })

  it('gives the jails what they need (an unmasked /proc in a pod of its own user namespace) and no more', () => {
    const pod = deployment().spec?.template.spec
    const container = pod?.containers[0]
    expect(pod?.hostUsers).toBe(false)
    expect(container?.securityContext).toEqual({
      procMount: 'Unmasked',
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    })
    expect(pod?.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      seccompProfile: { type: 'RuntimeDefault' },
    })
    expect(container?.readinessProbe?.httpGet?.path).toBe('/readyz')
    expect(container?.livenessProbe?.httpGet?.path).toBe('/healthz')
    expect(container?.resources?.requests).toBeDefined()
    expect(container?.envFrom).toEqual([{ secretRef: { name: 'analyst' } }])
  })

  const kubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0
  it.skipIf(!kubectl)('renders with kubectl kustomize, every object once', () => {
    const rendered = spawnSync('kubectl', ['kustomize', DIR], { encoding: 'utf8' })
    expect(rendered.status, rendered.stderr).toBe(0)
    const kinds = parseAllDocuments(rendered.stdout).map((doc) => (doc.toJS() as Manifest).kind)
    expect(kinds.sort()).toEqual(['Deployment', 'PodDisruptionBudget', 'Secret', 'Service'])
  })
})

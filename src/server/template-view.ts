/**
 * What a client sees of a built template: no host paths. Kept with a build's record in the store,
 * so that any replica shows the template a build made, wherever it was built.
 * @module
 */
import type { BuiltTemplate } from '../templates/types.js'
import type { TemplateView } from './types.js'

export function templateView(template: BuiltTemplate): TemplateView {
  return {
    id: template.id,
    name: template.names[0] ?? template.id.slice(0, 12),
    names: template.names,
    base:
      template.base.kind === 'debian'
        ? `debian:${template.base.suite}`
        : template.base.kind === 'oci'
          ? template.base.image
          : 'host',
    languages: template.languages,
    python: template.python.version,
    packages: template.packages,
    sizeBytes: template.sizeBytes,
    createdAt: template.createdAt,
  }
}

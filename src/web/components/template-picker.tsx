/**
 * The template a new session runs in: the server's default environment, or one of the templates
 * built on the server (GET /api/templates), each with its base, Python and main packages. Shown
 * only before the session exists, and only when the server has templates.
 */
import type { TemplateView } from '../../server/types.js'

/** "debian:trixie · Python 3.13.5 · pandas 2.2.3, numpy 2.2.4" */
export function templateSummary(template: TemplateView): string {
  const packages = Object.entries(template.packages)
    .slice(0, 4)
    .map(([name, version]) => `${name} ${version}`)
  return [template.base, `Python ${template.python}`, packages.join(', ')].filter(Boolean).join(' · ')
}

export function TemplatePicker({
  templates,
  chosen,
  onChoose,
}: {
  templates: TemplateView[]
  /** A template's name; undefined: the server's default. */
  chosen: string | undefined
  onChoose: (name: string | undefined) => void
}) {
  if (templates.length === 0) return null
  const current = templates.find((template) => template.name === chosen)
  return (
    <section class="datasets template-picker" aria-label="Environment">
      <label class="muted sources-title">
        Environment{' '}
        <select
          aria-label="Template"
          value={chosen ?? ''}
          onChange={(event) => {
            const value = (event.target as HTMLSelectElement).value
            onChoose(value === '' ? undefined : value)
          }}
        >
          <option value="">The server's default</option>
          {templates.map((template) => (
            <option key={template.id} value={template.name}>
              {template.name}
            </option>
          ))}
        </select>
      </label>
      {current && <p class="muted">{templateSummary(current)}</p>}
    </section>
  )
}

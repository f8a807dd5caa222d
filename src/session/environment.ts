/**
 * What a session records of its environment (the template, by name and by the id of the build the
 * name pointed at, and the language of its cells) and how a door gets it back: continuing a
 * session needs neither --template nor --language again, and its cells replay in the same build
 * even after the name has moved to a newer one.
 * @module
 */
import { ANALYSIS_LANGUAGES, type AnalysisLanguage } from '../agent/index.js'
import { InvalidArgumentError, NotFoundError } from '../errors.js'
import {
  capabilitiesOf,
  type SandboxCreateOptions,
  type SandboxLimits,
  type SandboxProvider,
} from '../sandbox/index.js'
import type { StoredSession } from '../store/index.js'
import type { TemplateStore } from '../templates/store.js'

/** Where built templates are found by name or id: the door's ANALYST_HOME/templates. */
export type TemplateCatalog = Pick<TemplateStore, 'resolve' | 'get'> & {
  /** Brings the template a name or id points at from another replica, when it is not here (serve's replicas). */
  ensure?(nameOrId: string): Promise<void>
}

/** The fields a new session records of its environment. */
export type RecordedEnvironment = Pick<StoredSession, 'template' | 'templateId' | 'language'>

/**
 * What a new session records: the template asked for (its name, and the id of its build where the
 * engine roots sandboxes in Analyst's builds and the door has a catalog) and its language. A name
 * that is not built is refused now, not at the first question.
 */
export function recordEnvironment(
  template: SandboxCreateOptions['template'],
  language: AnalysisLanguage | undefined,
  context: { provider: SandboxProvider; templates?: TemplateCatalog },
): RecordedEnvironment {
  const recorded: RecordedEnvironment = { language: language ?? 'python' }
  if (template === undefined) return recorded
  if (typeof template !== 'string')
    return { ...recorded, template: template.names[0] ?? template.id, templateId: template.id }
  if (capabilitiesOf(context.provider).templates !== 'built' || !context.templates)
    return { ...recorded, template }
  return { ...recorded, template, templateId: context.templates.resolve(template).id }
}

/**
 * The template a stored session's sandbox starts from: the build it was made in (by id) while it
 * is there; the name alone for sessions made before ids were kept, or on an engine with its own
 * templates. A removed build is said plainly, with how to get it back.
 */
export function sessionTemplate(
  session: StoredSession | undefined,
  context: { provider: SandboxProvider; templates?: TemplateCatalog },
): SandboxCreateOptions['template'] {
  if (!session?.template && !session?.templateId) return undefined
  const { template, templateId } = session
  if (!templateId || capabilitiesOf(context.provider).templates !== 'built') return template
  if (!context.templates) return templateId
  const built = context.templates.get(templateId)
  if (built) return built
  const named = template ? `"${template}" (build ${templateId.slice(0, 12)})` : templateId.slice(0, 12)
  throw new NotFoundError(`The template this session was made in, ${named}, is no longer built here`, {
    hint: `Build it again from the same spec (the same spec and inputs give the same id, ${templateId.slice(0, 12)}), or import its archive with analyst template import FILE; or start a new session${template ? ` with --template ${template}` : ''}.`,
  })
}

/**
 * A session's sandbox limits, in the order E2B's create has them: the door's own (`asked`: its
 * caller's), over its template's memory and CPUs, over the server's defaults (`defaults`: serve's
 * --memory and --cpus, ANALYST_SANDBOX_MEMORY and _CPUS). Only an engine that starts built
 * templates takes a template's; a name this catalog does not know is left to the engine to refuse.
 */
export function sessionLimits(
  template: SandboxCreateOptions['template'],
  asked: Partial<SandboxLimits> | undefined,
  defaults: Partial<SandboxLimits> | undefined,
  context: { provider: SandboxProvider; templates?: TemplateCatalog },
): Partial<SandboxLimits> | undefined {
  if (!defaults) return asked
  let resources: Partial<SandboxLimits> | undefined
  if (template !== undefined && capabilitiesOf(context.provider).templates === 'built') {
    try {
      resources =
        typeof template === 'string' ? context.templates?.resolve(template).resources : template.resources
    } catch (error) {
      if (!NotFoundError.isInstance(error)) throw error
    }
  }
  const given = (limits: Partial<SandboxLimits> = {}) =>
    Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined))
  return { ...given(defaults), ...given(resources), ...given(asked) }
}

/** The language a stored session's cells are in: its own, else (made before it was kept) the door's. */
export function sessionLanguage(
  session: StoredSession | undefined,
  door: AnalysisLanguage | undefined,
): AnalysisLanguage | undefined {
  const recorded = session?.language
  if (recorded === undefined) return door
  if (!(ANALYSIS_LANGUAGES as readonly string[]).includes(recorded)) {
    throw new InvalidArgumentError(
      `Session ${session?.id} is in ${recorded}, which this Analyst cannot run (it runs ${ANALYSIS_LANGUAGES.join(', ')})`,
      { hint: 'Upgrade Analyst to the version that made the session.' },
    )
  }
  return recorded as AnalysisLanguage
}

/**
 * A built template, as the store keeps it and an engine is handed it: the contract between the
 * builder (src/templates/) and the engines that start sandboxes from it (src/sandbox/*). An engine
 * never builds one; it reads this shape and roots its sandboxes in it.
 *
 * On disk, under ANALYST_HOME/templates:
 * ```
 * <id>/manifest.json   this BuiltTemplate, written last (a folder without it is a build that never
 *                      finished, and is not a template)
 * <id>/rootfs/         the root file system, for every base but the host's
 * <id>/venv/           pip layers over the host's Python (base 'host' with pip steps): a venv made
 *                      with --system-site-packages at /opt/venv, so an engine mounts it there
 *                      (python.path is /opt/venv/bin/python; its shebangs and pyvenv.cfg say so)
 * <id>/recipe.json     the recipe it was built from (for people; engines need not read it)
 * names/<name>         a symbolic link to ../<id>
 * ```
 * manifest.json holds this shape less what the folder's place says (dir, rootfs, names), plus
 * `hasRootfs`; read it with store.ts (`resolveTemplate(home, nameOrId)`), which fills those in.
 * @module
 */

/** What a template starts from. */
export type TemplateBase =
  /** The host's own Python and its packages (the default: no template). */
  | { kind: 'host' }
  /** A root file system of a Debian suite, made with mmdebstrap from Debian's archive. */
  | { kind: 'debian'; suite: string }
  /** An OCI image in local podman storage or in an image archive. */
  | { kind: 'oci'; image: string }

/** The memory and CPUs a template's sandboxes get unless whoever creates one sets their own. */
export interface TemplateResources {
  readonly memoryBytes?: number
  /** Thousandths of a core, as SandboxLimits.milliCpus. */
  readonly milliCpus?: number
}

/** The languages a template's kernels speak. */
export type TemplateLanguage = 'python' | 'r' | 'js' | 'ts' | 'bash'

export interface BuiltTemplate {
  /** The hash of the spec and its inputs (hex sha256): the same spec and inputs, the same id. */
  readonly id: string
  /** The names that point at it (a name moves to the newest build). */
  readonly names: string[]
  readonly base: TemplateBase
  /** The template's folder (ANALYST_HOME/templates/<id>). */
  readonly dir: string
  /** Its root file system; undefined for a template over the host (base 'host'). */
  readonly rootfs?: string
  /** The Python that kernels run, as a path inside the template (e.g. /usr/bin/python3, /opt/venv/bin/python). */
  readonly python: { path: string; version: string }
  /** The languages whose kernels it holds, the first the default. */
  readonly languages: TemplateLanguage[]
  /** The main packages and their versions (pandas → 2.2.3), for the prompt, `%pip` and `template show`. */
  readonly packages: Record<string, string>
  /** Set in every sandbox of the template. */
  readonly env: Record<string, string>
  /** The working directory; undefined: the workspace (/home/user). */
  readonly workdir?: string
  /** Code run once in the kernel; every sandbox forks from the state it leaves. */
  readonly start?: string
  /** Each sandbox's default memory and CPUs (the spec's memory and cpus, E2B's memoryMB and cpuCount). */
  readonly resources?: TemplateResources
  readonly sizeBytes: number
  /** ISO 8601. */
  readonly createdAt: string
}

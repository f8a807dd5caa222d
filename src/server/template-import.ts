/**
 * Templates carried in as archives (`analyst template export`), imported when the server starts:
 * how an image made with `npm run image -- --with-template NAME` brings its templates, and how a
 * replica without a shared ANALYST_HOME/templates gets the same ones. ANALYST_TEMPLATE_IMPORT
 * names folders (`:`-separated) whose *.tar files are read; one already in the store (the same id)
 * is skipped.
 * @module
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

export async function importTemplatesAtStart(
  home: string,
  folders: string | undefined,
  log: (line: string) => void,
): Promise<number> {
  const archives = (folders ?? '')
    .split(':')
    .filter(Boolean)
    .flatMap((folder) => {
      try {
        return readdirSync(folder)
          .filter((file) => file.endsWith('.tar'))
          .sort()
          .map((file) => join(folder, file))
      } catch {
        log(`ANALYST_TEMPLATE_IMPORT: no folder ${folder}`)
        return []
      }
    })
  if (archives.length === 0) return 0
  const { importTemplate } = await import('../templates/oci.js')
  let imported = 0
  for (const archive of archives) {
    const { template, existed } = await importTemplate(archive, home)
    if (!existed) imported++
    log(
      `template ${template.names.join(', ') || template.id.slice(0, 12)}: ${existed ? 'in the store already' : 'imported'} (${archive})`,
    )
  }
  return imported
}

/**
 * The server's sources for sql(): before a session exists, the ones the caller may give it (the
 * server's defaults ticked); once it exists, the ones it has. Each opens to what the model is told.
 */
import type { SourceInfo } from '../../server/types.js'
import { ScrollBox } from './scroll-box.js'

function Source({ source, control }: { source: SourceInfo; control?: preact.ComponentChildren }) {
  return (
    <details class="dataset source">
      <summary>
        {control}
        <span class="dataset-name">{source.name}</span>
        <span class="muted">{source.kind === 'file' ? 'file, queried in place' : source.kind}</span>
        {source.error && <span class="badge error">unreachable</span>}
      </summary>
      {source.error ? (
        <p class="alert">{source.error}</p>
      ) : (
        <ScrollBox class="output description" pre>
          {source.description}
        </ScrollBox>
      )}
      <p class="read-call">
        <code>sql("SELECT …", source="{source.name}")</code>
      </p>
    </details>
  )
}

export function Sources({
  available,
  chosen,
  fixed,
  onToggle,
}: {
  available: SourceInfo[]
  /** The names the session has, or will be made with. */
  chosen: string[]
  /** The session exists: its sources are shown, not chosen. */
  fixed: boolean
  onToggle: (name: string, on: boolean) => void
}) {
  const shown = fixed ? available.filter((source) => chosen.includes(source.name)) : available
  // A session's source that the caller can no longer see is still named.
  const unknown = fixed ? chosen.filter((name) => !available.some((source) => source.name === name)) : []
  if (shown.length === 0 && unknown.length === 0) return null
  return (
    <section class="datasets sources" aria-label="Data sources">
      <p class="muted sources-title">
        {fixed ? 'Sources its code queries with sql()' : 'Sources this session may query with sql()'}
      </p>
      {shown.map((source) => (
        <Source
          key={source.name}
          source={source}
          control={
            fixed ? undefined : (
              <input
                type="checkbox"
                aria-label={`Use ${source.name}`}
                checked={chosen.includes(source.name)}
                onClick={(event) => event.stopPropagation()}
                onChange={(event) => onToggle(source.name, (event.target as HTMLInputElement).checked)}
              />
            )
          }
        />
      ))}
      {unknown.map((name) => (
        <div key={name} class="dataset">
          <span class="dataset-name">{name}</span>
        </div>
      ))}
    </section>
  )
}

/**
 * What the session's kernel holds: each variable's name, type, and a frame's or array's shape and
 * memory. The panel is narrow: long names wrap, and what still does not fit scrolls in its own box.
 */
import { useEffect, useState } from 'preact/hooks'
import type { KernelVariable } from '../../session/frames.js'
import { json } from '../api.js'
import { bytes, count } from '../format.js'
import { ScrollBox } from './scroll-box.js'

export function Variables({ sessionId, version }: { sessionId: string; version: string }) {
  const [variables, setVariables] = useState<KernelVariable[] | null>(null)
  // Refreshed after each cell and question (`version` changes with the steps the session has).
  useEffect(() => {
    let gone = false
    json<KernelVariable[]>(`/api/sessions/${encodeURIComponent(sessionId)}/variables`).then(
      (listed) => !gone && setVariables(listed),
      () => !gone && setVariables(null),
    )
    return () => {
      gone = true
    }
  }, [sessionId, version])
  if (!variables) return null
  if (variables.length === 0)
    return <p class="muted small">No variables: the kernel holds none, or is not running.</p>
  return (
    <details class="variables" open>
      <summary>Variables ({variables.length})</summary>
      <ScrollBox class="table-wrap">
        <table class="data" aria-label="Variables">
          <thead>
            <tr>
              <th>name</th>
              <th>type</th>
              <th class="num">shape</th>
              <th class="num">memory</th>
            </tr>
          </thead>
          <tbody>
            {variables.map((variable) => (
              <tr key={variable.name}>
                <td>{variable.name}</td>
                <td>{variable.type}</td>
                <td class="num shape">
                  {variable.shape
                    ? variable.shape.map(count).join(' × ')
                    : variable.length !== undefined
                      ? count(variable.length)
                      : ''}
                </td>
                <td class="num">{variable.bytes !== undefined ? bytes(variable.bytes) : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
    </details>
  )
}

/** A table from a result's `data` ({ column: values[] }): cells as text, never HTML. */
import { useState } from 'preact/hooks'
import { ScrollBox } from './scroll-box.js'

const FIRST_ROWS = 12
const MAX_ROWS = 500

function cell(value: unknown): { text: string; kind: string } {
  if (value === null || value === undefined) return { text: 'NaN', kind: 'null' }
  if (typeof value === 'number') return { text: String(value), kind: 'num' }
  if (typeof value === 'boolean') return { text: value ? 'True' : 'False', kind: 'bool' }
  if (typeof value === 'string') return { text: value, kind: 'str' }
  return { text: JSON.stringify(value), kind: 'str' }
}

export function DataTable({ data }: { data: Record<string, unknown[]> }) {
  const [all, setAll] = useState(false)
  const columns = Object.keys(data)
  const rows = Math.max(0, ...columns.map((name) => data[name]?.length ?? 0))
  const shown = Math.min(rows, all ? MAX_ROWS : FIRST_ROWS)
  const numeric = new Set(
    columns.filter((name) => (data[name] ?? []).every((v) => v === null || typeof v === 'number')),
  )
  return (
    <div class="table-block">
      <ScrollBox class="table-wrap">
        <table class="data">
          <thead>
            <tr>
              {columns.map((name) => (
                <th key={name} class={numeric.has(name) ? 'num' : undefined}>
                  {name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {Array.from({ length: shown }, (_, r) => (
              <tr key={r}>
                {columns.map((name) => {
                  const { text, kind } = cell(data[name]?.[r])
                  return (
                    <td key={name} class={kind}>
                      {text}
                    </td>
                  )
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      <div class="table-foot">
        {rows} row{rows === 1 ? '' : 's'} × {columns.length} column{columns.length === 1 ? '' : 's'}
        {rows > shown && !all && (
          <button type="button" class="link" onClick={() => setAll(true)}>
            show {Math.min(rows, MAX_ROWS)}
          </button>
        )}
        {rows > MAX_ROWS && all && <span> · first {MAX_ROWS} shown</span>}
      </div>
    </div>
  )
}

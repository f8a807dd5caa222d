/** A table from a result's `data` ({ column: values[] }): its first rows, more on demand. */
import { useState } from 'preact/hooks'
import { count } from '../format.js'
import { type Columns, GridTable } from './grid-table.js'

const FIRST_ROWS = 12
const MAX_ROWS = 500

export function DataTable({ data }: { data: Columns }) {
  const [all, setAll] = useState(false)
  const columns = Object.keys(data)
  const rows = Math.max(0, ...columns.map((name) => data[name]?.length ?? 0))
  const shown = Math.min(rows, all ? MAX_ROWS : FIRST_ROWS)
  return (
    <div class="table-block">
      <GridTable data={data} shown={shown} />
      <div class="table-foot">
        {count(rows)} row{rows === 1 ? '' : 's'} × {columns.length} column{columns.length === 1 ? '' : 's'}
        {rows > shown && !all && (
          <button type="button" class="link" onClick={() => setAll(true)}>
            show {count(Math.min(rows, MAX_ROWS))}
          </button>
        )}
        {rows > MAX_ROWS && all && <span> · first {count(MAX_ROWS)} shown</span>}
      </div>
    </div>
  )
}

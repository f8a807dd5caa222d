/** The session's data files and their profiles: what the model is told about them before any code runs. */
import type { ColumnProfile, DatasetProfile } from '../../data/types.js'
import type { DatasetInfo } from '../../server/types.js'
import { withToken } from '../api.js'
import { bytes, count, num } from '../format.js'
import { ScrollBox } from './scroll-box.js'

function summary(column: ColumnProfile): string {
  if (column.dates) return `${column.dates.min} → ${column.dates.max}`
  if (column.min !== undefined && column.max !== undefined) {
    const mean = column.mean !== undefined ? ` · mean ${num(column.mean)}` : ''
    return `${num(column.min)} → ${num(column.max)}${mean}`
  }
  if (column.top && column.top.length > 0)
    return column.top
      .slice(0, 3)
      .map((top) => `${top.value} (${count(top.count)})`)
      .join(', ')
  return ''
}

function sample(value: unknown): string {
  if (value === null) return 'NaN'
  if (typeof value === 'boolean') return value ? 'True' : 'False'
  return String(value)
}

function Profile({ profile }: { profile: DatasetProfile }) {
  if (profile.error) return <p class="alert">{profile.error}</p>
  return (
    <div class="profile">
      <ScrollBox class="table-wrap">
        <table class="columns">
          <thead>
            <tr>
              <th>Column</th>
              <th>Type</th>
              <th class="num">Missing</th>
              <th class="num">Distinct</th>
              <th>Range or top values</th>
              <th>Samples</th>
            </tr>
          </thead>
          <tbody>
            {profile.columns.map((column) => (
              <tr key={column.name}>
                <td class="column-name">{column.name}</td>
                <td>
                  <span class="dtype">{column.dtype}</span>
                </td>
                <td class={`num ${column.nulls > 0 ? 'has-nulls' : 'muted'}`}>{count(column.nulls)}</td>
                <td class="num">
                  {count(column.distinct)}
                  {column.distinctEstimated ? '+' : ''}
                </td>
                <td class="summary" title={summary(column)}>
                  {summary(column)}
                </td>
                <td class="samples" title={column.samples.map(sample).join(', ')}>
                  {column.samples.map(sample).join(', ')}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {profile.warnings.length > 0 && (
        <ul class="warnings">
          {profile.warnings.map((warning) => (
            <li key={warning}>{warning}</li>
          ))}
        </ul>
      )}
      <p class="read-call">
        <code>{profile.readCall}</code>
      </p>
    </div>
  )
}

/** A data file's download, as it was uploaded. */
export function DownloadLink({ url, name }: { url: string; name: string }) {
  return (
    <a class="file-chip" href={withToken(url)} download={name} title={`Download ${name} as it was uploaded`}>
      <span class="file-icon" aria-hidden="true">
        ↓
      </span>
      {name}
    </a>
  )
}

/**
 * A file's profile folds under its name; its download link sits beside the fold, not inside it
 * (a link inside a <summary> is a control inside a control, which screen readers cannot reach).
 */
function Dataset({ dataset, open, url }: { dataset: DatasetInfo; open: boolean; url?: string }) {
  const { profile } = dataset
  const rows = profile.rows ? `${profile.rowsEstimated ? '≈' : ''}${count(profile.rows)} rows` : ''
  return (
    <div class={`dataset-item${url ? ' downloadable' : ''}`}>
      <details class="dataset" open={open}>
        <summary>
          <span class="dataset-name">{dataset.name}</span>
          <span class="muted">
            {[
              rows,
              profile.columns.length ? `${profile.columns.length} columns` : '',
              bytes(dataset.bytes),
              profile.format,
            ]
              .filter(Boolean)
              .join(' · ')}
          </span>
        </summary>
        <Profile profile={profile} />
      </details>
      {url && (
        <a
          class="file-chip dataset-download"
          href={withToken(url)}
          download={dataset.name}
          aria-label={`Download ${dataset.name}`}
          title={`Download ${dataset.name} as it was uploaded`}
        >
          <span class="file-icon" aria-hidden="true">
            ↓
          </span>
          Download
        </a>
      )}
    </div>
  )
}

export function Datasets({
  datasets,
  uploading,
  expand,
  onChoose,
  fileUrl,
}: {
  datasets: DatasetInfo[]
  uploading: string[]
  /** Open the profiles (before the first question). */
  expand: boolean
  onChoose: (files: File[]) => void
  /** Where each file downloads from, once the session has it. */
  fileUrl?: (name: string) => string
}) {
  return (
    <section class="datasets" aria-label="Data files">
      {datasets.map((dataset) => (
        <Dataset key={dataset.name} dataset={dataset} open={expand} url={fileUrl?.(dataset.name)} />
      ))}
      {uploading.map((name) => (
        <div key={name} class="dataset uploading">
          <span class="spinner" aria-hidden="true" /> Uploading and profiling {name}…
        </div>
      ))}
      <label class="add-files">
        <input
          type="file"
          multiple
          aria-label="Add data files"
          onChange={(event) => {
            const input = event.currentTarget
            const files = Array.from(input.files ?? [])
            input.value = ''
            if (files.length > 0) onChoose(files)
          }}
        />
        <span class="button secondary">Add files</span>
        <span class="muted"> or drop them anywhere: CSV, TSV, JSON, Excel, Parquet</span>
      </label>
    </section>
  )
}

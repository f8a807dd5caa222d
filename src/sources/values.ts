/**
 * The value forms QueryColumnType promises, shared by every driver: integers beyond 2^53 as decimal
 * strings, NaN and the infinities as strings (so NULL stays apart from NaN), bytes as base64,
 * timestamps in ISO 8601.
 * @module
 */

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)

/** An integer: a number when it is exact as one, else its decimal string. */
export function intValue(value: bigint | number | string): number | string {
  if (typeof value === 'number') return value
  if (typeof value === 'bigint')
    return value <= MAX_SAFE && value >= -MAX_SAFE ? Number(value) : value.toString()
  const number = Number(value)
  return Number.isSafeInteger(number) ? number : value
}

/** A float: NaN and the infinities as the strings the kernel turns back into floats. */
export function floatValue(value: number): number | string {
  if (Number.isFinite(value)) return value
  return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity'
}

/** A float from its text form (PostgreSQL's `NaN`, `Infinity`, `-Infinity`). */
export function floatFromText(text: string): number | string {
  return text === 'NaN' || text === 'Infinity' || text === '-Infinity' ? text : Number(text)
}

export function bytesValue(value: Uint8Array): string {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')
}

/** `2024-01-02 03:04:05.5` → `2024-01-02T03:04:05.5` */
export function isoTimestamp(text: string): string {
  return text.replace(' ', 'T')
}

/** `2024-01-02 03:04:05+00` → `2024-01-02T03:04:05+00:00` */
export function isoTimestamptz(text: string): string {
  return text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')
}

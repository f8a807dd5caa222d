/**
 * The two forms a kernel message takes on a Jupyter server's kernel WebSocket. The legacy form is
 * one JSON text per message, which the server makes by parsing each message from the kernel
 * (its signature checked, its dates read) and serializing it again. The v1 form
 * (`v1.kernel.websocket.jupyter.org`, JupyterLab 4's; Debian 12's Jupyter Server 1.23 has it) is a binary
 * frame that carries the kernel's own JSON parts, which the server passes through as they are:
 *
 *   n (u64 LE) · n offsets (u64 LE) · channel · header · parent_header · metadata · content · buffers…
 *
 * where offset i is where part i starts and the last offset is where the last part ends.
 * (jupyter_server/base/zmqhandlers.py: serialize_msg_to_ws_v1, deserialize_msg_from_ws_v1.)
 * @module
 */

export const V1_PROTOCOL = 'v1.kernel.websocket.jupyter.org'

export interface WireMessage {
  channel: string
  header: unknown
  parent_header: unknown
  metadata: unknown
  content: unknown
}

const PARTS = ['header', 'parent_header', 'metadata', 'content'] as const

/** An unsigned 64-bit little-endian integer, as a number (frames are far below 2^53 bytes). */
function u64(frame: Buffer, at: number): number {
  return frame.readUInt32LE(at) + frame.readUInt32LE(at + 4) * 2 ** 32
}

/** One v1 frame; binary buffers (after the content) are not used by Analyst and left out. */
export function decodeV1(frame: Buffer): WireMessage {
  const count = u64(frame, 0)
  if (count < 2 + PARTS.length || frame.length < 8 * (count + 1)) throw new Error('short v1 frame')
  const offsets: number[] = []
  for (let i = 0; i < count; i++) offsets.push(u64(frame, 8 * (i + 1)))
  const part = (i: number) => frame.toString('utf8', offsets[i], offsets[i + 1])
  const message = { channel: part(0) } as WireMessage
  PARTS.forEach((name, i) => {
    message[name] = JSON.parse(part(i + 1))
  })
  return message
}

export function encodeV1(message: WireMessage): Buffer {
  const parts = [message.channel, ...PARTS.map((name) => JSON.stringify(message[name]))].map((text) =>
    Buffer.from(text, 'utf8'),
  )
  const head = Buffer.alloc(8 * (parts.length + 2))
  head.writeBigUInt64LE(BigInt(parts.length + 1), 0)
  let offset = head.length
  parts.forEach((part, i) => {
    head.writeBigUInt64LE(BigInt(offset), 8 * (i + 1))
    offset += part.length
  })
  head.writeBigUInt64LE(BigInt(offset), 8 * (parts.length + 1))
  return Buffer.concat([head, ...parts])
}

/**
 * The modal provider (Analyst's kernel in Modal Sandboxes through the official `modal` SDK, driven
 * unchanged), run against a fake Modal on 127.0.0.1 (src/test/modal-control-plane.ts) that speaks
 * Modal's gRPC protocol with the SDK's own definitions, each exec a local bubblewrap jail. The
 * shared conformance suite, then what is the provider's own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { describeConformance } from '../../src/sandbox/conformance.case.js'
import { Sandbox } from '../../src/sandbox/index.js'
import { MODAL_CAPABILITIES, ModalProvider } from '../../src/sandbox/modal/index.js'
import { type FakeModal, startFakeModal } from '../../src/test/modal-control-plane.js'

let fake: FakeModal
let provider: ModalProvider
beforeAll(async () => {
  fake = await startFakeModal()
  // The SDK reads its server from the environment when a client is made (at the first create).
  process.env.MODAL_SERVER_URL = fake.url
  provider = new ModalProvider({ tokenId: fake.tokenId, tokenSecret: fake.tokenSecret })
})
afterAll(async () => {
  await fake?.close()
})

const create = (options: Parameters<typeof Sandbox.create>[0] = {}) =>
  Sandbox.create({ provider, ...options })

describeConformance({ name: 'modal', create, capabilities: MODAL_CAPABILITIES })

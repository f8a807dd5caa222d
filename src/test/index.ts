/**
 * Test helpers for code built on Analyst: a sandbox provider that runs nothing, a model that
 * replies from a script, and the conformance suite every sandbox engine runs (it needs vitest).
 * `import { MockSandboxProvider, ScriptedModel, describeConformance } from 'analyst/test'`.
 * @module
 */
export { ScriptedModel, type ScriptedReply, type ScriptStep } from '../models/scripted.js'
export { type ConformanceOptions, describeConformance } from './conformance.js'
export { type MockCell, MockSandboxProvider, type MockSandboxRecord } from './mock-sandbox.js'

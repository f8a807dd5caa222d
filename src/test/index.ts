/**
 * Test helpers for code built on Analyst: a sandbox provider that runs nothing, and a model that
 * replies from a script. `import { MockSandboxProvider, ScriptedModel } from 'analyst/test'`.
 * @module
 */
export { ScriptedModel, type ScriptedReply, type ScriptStep } from '../models/scripted.js'
export { type MockCell, MockSandboxProvider, type MockSandboxRecord } from './mock-sandbox.js'

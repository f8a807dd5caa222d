/**
 * The kernel's interpreter: the host's Python (src/python.ts), whose paths the jail binds read-only,
 * and where the kernel's own Python files are.
 * @module
 */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export { MODULE_SOURCES } from '../../packages.js'
export { EXPECTED_MODULES, findPython, type PythonInfo, probePython } from '../../python.js'

/** The kernel's Python files (analyst_kernel.py and the modules beside it), in src/ or dist/. */
export const KERNEL_PYTHON_DIR = join(dirname(fileURLToPath(import.meta.url)), 'python')

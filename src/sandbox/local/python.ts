/**
 * The kernel's interpreter: the host's Python (src/python.ts), whose paths the jail binds
 * read-only, and the local engine's own Python files (the zygote and its launcher).
 * @module
 */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export { MODULE_SOURCES } from '../../packages.js'
export { EXPECTED_MODULES, findPython, type PythonInfo, probePython } from '../../python.js'

/** analyst_zygote.py and analyst_launcher.py, in src/ or dist/. */
export const LOCAL_PYTHON_DIR = join(dirname(fileURLToPath(import.meta.url)), 'python')

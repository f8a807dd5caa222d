/**
 * The kernel's interpreter: the host's Python (src/python.ts), whose paths the jail binds read-only.
 * @module
 */
export { EXPECTED_MODULES, findPython, type PythonInfo, probePython } from '../../python.js'

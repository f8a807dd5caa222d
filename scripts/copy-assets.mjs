// Copies the Python files next to the compiled code (dist/pylib, dist/sandbox/python, dist/sandbox/local/python)
// and the Jupyter engine's prelude (dist/sandbox/jupyter).
import { cpSync } from 'node:fs'

const python = { recursive: true, filter: (source) => !source.includes('__pycache__') }
cpSync('src/pylib', 'dist/pylib', python)
cpSync('src/sandbox/python', 'dist/sandbox/python', python)
cpSync('src/sandbox/local/python', 'dist/sandbox/local/python', python)
cpSync('src/sandbox/jupyter/prelude.py', 'dist/sandbox/jupyter/prelude.py')

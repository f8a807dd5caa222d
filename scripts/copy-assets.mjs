// Copies the kernels' Python files next to the compiled code (dist/sandbox/python, dist/sandbox/local/python)
// and the Jupyter engine's prelude (dist/sandbox/jupyter).
import { cpSync } from 'node:fs'

const python = { recursive: true, filter: (source) => !source.includes('__pycache__') }
cpSync('src/sandbox/python', 'dist/sandbox/python', python)
cpSync('src/sandbox/local/python', 'dist/sandbox/local/python', python)
cpSync('src/sandbox/jupyter/prelude.py', 'dist/sandbox/jupyter/prelude.py')

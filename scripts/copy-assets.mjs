// Copies the Python files next to the compiled code (dist/pylib, dist/sandbox/python,
// dist/sandbox/kernel/python, dist/sandbox/local/python), the R and JavaScript kernels
// (dist/sandbox/kernel/languages), the Jupyter engine's prelude and the template recipes.
import { cpSync } from 'node:fs'

const python = { recursive: true, filter: (source) => !source.includes('__pycache__') }
for (const dir of [
  'pylib',
  'sandbox/python',
  'sandbox/kernel/python',
  'sandbox/kernel/languages',
  'sandbox/local/python',
]) {
  cpSync(`src/${dir}`, `dist/${dir}`, python)
}
cpSync('src/sandbox/jupyter/prelude.py', 'dist/sandbox/jupyter/prelude.py')
// The template recipes shipped with Analyst (analyst template build modern).
cpSync('src/templates/recipes', 'dist/templates/recipes', { recursive: true })

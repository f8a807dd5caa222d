// Copies the kernel's Python files next to the compiled backend (dist/sandbox/local/python).
import { cpSync } from 'node:fs'

cpSync('src/sandbox/local/python', 'dist/sandbox/local/python', {
  recursive: true,
  filter: (source) => !source.includes('__pycache__'),
})

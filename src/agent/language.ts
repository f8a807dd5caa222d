/**
 * The language the model writes its analysis in: Python (the default) or R. Each has its tool (or
 * fence), the words the prompt uses for its sandbox, and whether the guard can read it (Python
 * only: R runs with the jail, the limits and the sources' checks as its barriers, DESIGN.md's
 * security layers 2 to 6).
 * @module
 */
export type AnalysisLanguage = 'python' | 'r'

export const ANALYSIS_LANGUAGES: readonly AnalysisLanguage[] = ['python', 'r']

export interface LanguageProfile {
  language: AnalysisLanguage
  /** As people write it. */
  name: string
  /** The tool the model calls in tools mode. */
  tool: string
  /** Fence info strings whose blocks run (lowercase; '' is a bare fence). */
  fences: ReadonlySet<string>
  /** The fence the model is told to write. */
  fence: string
  /** The prompt's lines about the sandbox, the packages and charts. */
  sandbox: string
  /** The prompt's line about the table sql() returns. */
  sqlResult: string
  /** Where the prompt tells the model to look when code fails. */
  repair: string
  /** The guard checks this language's code. */
  guarded: boolean
}

export const LANGUAGE_PROFILES: Record<AnalysisLanguage, LanguageProfile> = {
  python: {
    language: 'python',
    name: 'Python',
    tool: 'run_python',
    fences: new Set(['', 'python', 'py', 'python3', 'py3', 'ipython', 'pycon']),
    fence: 'python',
    sandbox:
      '- A stateful Python 3 kernel, like a Jupyter notebook: variables, imports and functions persist between your code runs.\n' +
      '- pandas, numpy, matplotlib, seaborn, scipy, scikit-learn and statsmodels are installed.',
    sqlResult: 'a pandas DataFrame',
    repair: 'for example print df.columns to get the exact column names',
    guarded: true,
  },
  r: {
    language: 'r',
    name: 'R',
    tool: 'run_r',
    fences: new Set(['', 'r', 'rscript', 'splus']),
    fence: 'r',
    sandbox:
      '- A stateful R session, like an R notebook: variables, functions and loaded libraries persist between your code runs.\n' +
      '- The tidyverse (dplyr, tidyr, readr, ggplot2), data.table and base R are installed. Read files with readr::read_csv() (or data.table::fread(), read.csv()), Excel with readxl::read_excel(), JSON with jsonlite; each file below shows its read call.',
    sqlResult: 'a data.frame',
    repair: 'for example print names(df) to get the exact column names',
    guarded: false,
  },
}

/** The profile of a language by its name (undefined: Python); an unknown one is refused by the door. */
export function languageProfile(language: AnalysisLanguage | undefined): LanguageProfile {
  return LANGUAGE_PROFILES[language ?? 'python']
}

/**
 * Published InfiAgent-DABench figures, shown beside a run's scores for orientation. They were not
 * measured here: other agents, other prompts, other dates (the leaderboard used temperature 0.2).
 * @module
 */

export interface PublishedScore {
  name: string
  /** Fractions from 0 to 1; undefined where the source gives none. */
  abq: number
  psaq?: number
  uasq?: number
  source: string
}

const LEADERBOARD = 'InfiAgent-DABench leaderboard, infiagent.github.io'

export const PUBLISHED: PublishedScore[] = [
  {
    name: 'Data Interpreter (MetaGPT), gpt-4o',
    abq: 0.9493,
    source: 'MetaGPT, examples/di/InfiAgent-DABench',
  },
  { name: 'gpt-4-0613', abq: 0.7872, psaq: 0.746, uasq: 0.7901, source: LEADERBOARD },
  { name: 'daagent-34b', abq: 0.675, psaq: 0.6077, uasq: 0.6298, source: LEADERBOARD },
  { name: 'gpt-3.5-turbo-0613', abq: 0.657, psaq: 0.582, uasq: 0.6188, source: LEADERBOARD },
  { name: 'qwen-72b-chat', abq: 0.6246, psaq: 0.5756, uasq: 0.5617, source: LEADERBOARD },
  { name: 'gemini-pro', abq: 0.5832, psaq: 0.5338, uasq: 0.5193, source: LEADERBOARD },
  { name: 'mixtral-8x7b-instruct-v0.1', abq: 0.5402, psaq: 0.492, uasq: 0.5138, source: LEADERBOARD },
  { name: 'claude-2.1', abq: 0.4965, psaq: 0.4341, uasq: 0.4696, source: LEADERBOARD },
]

// An analyst as a LangGraph.js graph on Analyst's sandbox: generate code → execute → (an error,
// and fewer than 4 tries → generate again) → interpret. The model is any LangChain chat model;
// the code runs in Analyst's jail through its LangChain tool (the guard first).
import { AIMessage, HumanMessage, SystemMessage } from '@langchain/core/messages'
import { Annotation, END, START, StateGraph } from '@langchain/langgraph'
import { runPythonTool } from 'analyst/langchain'

/** Tries of the generate → execute loop before the graph interprets what it has. */
export const MAX_ITERATIONS = 4

const State = Annotation.Root({
  question: Annotation(),
  /** The data files, described as Analyst's own prompt describes them. */
  data: Annotation(),
  code: Annotation(),
  /** What the last execution printed (or why the guard stopped it), as the model reads it. */
  output: Annotation(),
  /** The charts of the last execution, base64 PNG. */
  images: Annotation(),
  error: Annotation(),
  iterations: Annotation({ reducer: (_, next) => next, default: () => 0 }),
  answer: Annotation(),
})

const SYSTEM = `You are a data analyst. Answer the question with Python code that runs in a Jupyter-like sandbox with pandas, numpy and matplotlib and no network. The data files are read-only at data/<name>:

{data}

Reply with one \`\`\`python block that prints every number the answer needs.`

/** The code of a reply: its first fenced block, else the whole reply. */
export function codeOf(reply) {
  const match = /```(?:python|py)?[^\n]*\n([\s\S]*?)```/.exec(reply)
  return (match ? match[1] : reply).trim()
}

const text = (message) =>
  typeof message.content === 'string'
    ? message.content
    : message.content.map((part) => part.text ?? '').join('')

/**
 * The compiled graph. `model`: a LangChain chat model; `sandbox`: an Analyst Sandbox holding the
 * data files; `data`: their description (describeData from analyst/langchain).
 */
export function buildAnalystGraph({ model, sandbox, maxIterations = MAX_ITERATIONS }) {
  const runPython = runPythonTool(sandbox)

  async function generate(state) {
    const messages = [
      new SystemMessage(SYSTEM.replace('{data}', state.data)),
      new HumanMessage(state.question),
    ]
    if (state.error) {
      messages.push(
        new AIMessage(`\`\`\`python\n${state.code}\n\`\`\``),
        new HumanMessage(
          `That failed:\n${state.output}\nFix the code and reply with the whole corrected block.`,
        ),
      )
    }
    const reply = await model.invoke(messages)
    return { code: codeOf(text(reply)), iterations: state.iterations + 1 }
  }

  async function execute(state) {
    // Called with a tool call, the tool answers a ToolMessage: the text, and the whole outcome as its artifact.
    const message = await runPython.invoke({
      name: 'run_python',
      args: { code: state.code },
      id: `cell-${state.iterations}`,
      type: 'tool_call',
    })
    return {
      output: message.content,
      images: message.artifact.images.map((image) => image.data),
      error: message.artifact.isError,
    }
  }

  function route(state) {
    return state.error && state.iterations < maxIterations ? 'generate' : 'interpret'
  }

  async function interpret(state) {
    const outcome = state.error
      ? `The code still failed after ${state.iterations} tries. Say what went wrong, plainly.`
      : 'Answer the question in plain words from this output. Cite its numbers; add none of your own.'
    const reply = await model.invoke([
      new SystemMessage('You are a data analyst explaining results to a colleague.'),
      new HumanMessage(
        `Question: ${state.question}\n\nCode:\n\`\`\`python\n${state.code}\n\`\`\`\n\nOutput:\n${state.output}\n\n${outcome}`,
      ),
    ])
    return { answer: text(reply) }
  }

  return new StateGraph(State)
    .addNode('generate', generate)
    .addNode('execute', execute)
    .addNode('interpret', interpret)
    .addEdge(START, 'generate')
    .addEdge('generate', 'execute')
    .addConditionalEdges('execute', route, ['generate', 'interpret'])
    .addEdge('interpret', END)
    .compile()
}

/**
 * Python highlighted with highlight.js (through lowlight, which returns a syntax tree): the tree
 * becomes elements, so model-written code never reaches the page as HTML.
 */
import type { Element, ElementContent, Root } from 'hast'
import python from 'highlight.js/lib/languages/python'
import { createLowlight } from 'lowlight'
import type { ComponentChild } from 'preact'
import { useMemo } from 'preact/hooks'
import { ScrollBox } from './scroll-box.js'

const lowlight = createLowlight({ python })

function render(nodes: ElementContent[]): ComponentChild[] {
  return nodes.map((node, index) => {
    if (node.type === 'text') return node.value
    if (node.type !== 'element') return null
    const element = node as Element
    const className = element.properties.className
    return (
      <span key={index} class={Array.isArray(className) ? className.join(' ') : undefined}>
        {render(element.children)}
      </span>
    )
  })
}

export function Code({ code }: { code: string }) {
  const tree = useMemo<Root | null>(() => {
    try {
      return lowlight.highlight('python', code)
    } catch {
      return null
    }
  }, [code])
  return (
    <ScrollBox class="code" pre>
      <code class="hljs language-python">{tree ? render(tree.children as ElementContent[]) : code}</code>
    </ScrollBox>
  )
}

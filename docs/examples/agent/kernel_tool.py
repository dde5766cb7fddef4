from typing import Any

from hologram.agent import KernelTool, ToolInvocation, ToolRegistry

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "what to look for"}},
    "required": ["query"],
    "additionalProperties": False,
}


async def coldcontext_query(arguments: dict[str, Any], call: ToolInvocation) -> str:
    return f"nothing older about {arguments['query']!r} in session {call.session_id}"


def install(tools: ToolRegistry) -> None:  # in the kernel: install(service.agent.tools)
    tools.add_kernel_tool(KernelTool("coldcontext_query", "…", coldcontext_query, SCHEMA, parallel_safe=True))

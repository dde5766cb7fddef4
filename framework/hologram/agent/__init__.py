"""The agent turn: the loop, the tool registry and executor, and the wiring into a kernel.

    service = attach_agent(kernel)                               # hologram up does this
    result = await agent.run_turn("hi", session_id=None, on_event=print)  # events: hologram.api.turn

See docs/agent.md.
"""

from hologram.agent.attach import attach_agent, build_chain
from hologram.agent.executor import BatchReport, Executor, Outcome
from hologram.agent.service import TurnService
from hologram.agent.tools import KernelTool, Tool, ToolInvocation, ToolRegistry, ToolSet
from hologram.agent.turn import Agent, TurnError, TurnResult

__all__ = [
    "Agent",
    "BatchReport",
    "Executor",
    "KernelTool",
    "Outcome",
    "Tool",
    "ToolInvocation",
    "ToolRegistry",
    "ToolSet",
    "TurnError",
    "TurnResult",
    "TurnService",
    "attach_agent",
    "build_chain",
]

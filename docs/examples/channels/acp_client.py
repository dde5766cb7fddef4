import os
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import AgentMessageChunk, AllowedOutcome, Implementation, RequestPermissionResponse


class Editor:
    """What an ACP client implements: it shows the updates and answers the permission requests."""

    def __init__(self) -> None:
        self.answer = ""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.answer += update.content.text

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        print(f"allowed once: {tool_call.title}")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="approve_once"))


async def ask(data_dir: str, text: str, hologram: str = "hologram") -> str:
    """One prompt through `hologram acp`: the answer as it streamed."""
    editor = Editor()
    async with spawn_agent_process(editor, hologram, "acp", "--data", data_dir) as (conn, _):
        me = Implementation(name="my-editor", version="1.0")
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_info=me)
        session = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
        await conn.prompt(session_id=session, prompt=[text_block(text)])
    return editor.answer

"""Another agent talks to Hologram over A2A with the official ``a2a-sdk`` client."""

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_text_message
from a2a.types import a2a_pb2 as pb


async def ask(url: str, token: str, text: str, context: str | None = None) -> tuple[str, str]:
    """Hologram's answer, and the context (Hologram's session) to pass back to continue the conversation."""
    headers = {"Authorization": f"Bearer {token}"}  # on every request, the agent card's included
    async with httpx.AsyncClient(headers=headers, timeout=300) as http:
        client = await ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create_from_url(url)
        message = new_text_message(text, context_id=context, role=pb.ROLE_USER)
        answer, context_id = "", context or ""
        async for event in client.send_message(pb.SendMessageRequest(message=message)):
            if event.HasField("task"):
                context_id = event.task.context_id
            elif event.HasField("artifact_update"):  # the answer, as it is written
                answer += "".join(part.text for part in event.artifact_update.artifact.parts)
        await client.close()
    return answer, context_id

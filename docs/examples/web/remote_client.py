from hologram.api import turn as api
from hologram.clients import HttpTurnClient


async def ask(url: str, token: str, text: str) -> str:
    """One turn on a kernel elsewhere: the answer as it streamed."""
    answer = ""
    async with await HttpTurnClient.connect(url, token) as client:
        turn = await client.start(text)
        async for event in turn:
            if isinstance(event, api.ContentDelta):
                answer += event.text
    return answer

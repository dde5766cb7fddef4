"""Hologram as a model for the official `openai` SDK: one real Hologram turn per request."""

from __future__ import annotations

import sys
from pathlib import Path

from openai import OpenAI


def ask(url: str, token: str, text: str, session: str) -> tuple[str, str | None]:
    """The answer and the model's reasoning; the conversation is kept in Hologram's session ``session``."""
    client = OpenAI(base_url=f"{url}/v1", api_key=token)  # the access token is the API key
    reply = client.chat.completions.create(
        model="hologram",
        user=session,  # or extra_headers={"X-Hologram-Session": session}
        messages=[{"role": "user", "content": text}],
    )
    message = reply.choices[0].message
    return message.content or "", getattr(message, "reasoning_content", None)


if __name__ == "__main__":
    token = Path(".hologram/http-token").read_text().strip()
    answer, reasoning = ask("http://127.0.0.1:8080", token, " ".join(sys.argv[1:]) or "hello", "my-project")
    print(answer)

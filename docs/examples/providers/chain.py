from hologram.llm import ChatRequest, ChatResult, Delta, Done, Message, ProviderChain, ProviderSettings


async def ask(providers: list[ProviderSettings], question: str) -> tuple[ChatResult, list[str]]:
    history = [Message.system("Be brief."), Message.user(question)]
    shown: list[str] = []
    async with ProviderChain(providers) as chain:  # transport=..., sleep=..., clock=... injectable
        result = await chain.complete(ChatRequest(history), on_delta=lambda d: shown.append(d.text))  # sync or async
        history.append(result.to_message())  # reasoning of *this* response, byte-exact
        history.append(Message.user("Once more, streamed."))
        async for event in chain.stream(ChatRequest(history)):  # Delta(kind="content"|"reasoning", text) ..., Done
            if isinstance(event, Delta):
                shown.append(event.text)
            elif isinstance(event, Done):
                result = event.result
    return result, shown

from hologram.sdk import BeforeToolcallView, Change, Plugin

plugin = Plugin("guard")


@plugin.stage("before_toolcall")  # manifest: [stages] before_toolcall = { order = 10 }
async def guard(view: BeforeToolcallView) -> Change | None:
    if view.tool_call.name != "shell_run":
        return None
    answer = await plugin.facility("kernel.sessions").call(
        "approve",
        session_id=view.session_id,
        tool="shell_run",
        arguments=view.tool_call.arguments,
        summary="run a shell command",
    )
    return None if answer["approved"] else view.deny(answer["reason"])


if __name__ == "__main__":
    plugin.run()

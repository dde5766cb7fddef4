from hologram.sdk import BeforeToolcallView, Change, Plugin

plugin = Plugin("guard")


@plugin.stage("before_toolcall")  # manifest: [stages] before_toolcall = { order = 10 }
async def guard(view: BeforeToolcallView) -> Change | None:
    """Refuse `sudo` on this machine whatever the approval policy says (asking is the kernel's: the tool's
    manifest declares needs_approval; a hook audits, denies or rewrites)."""
    if view.tool_call.name != "shell_run":
        return None
    command = str(view.tool_call.arguments.get("command", ""))
    if command.split()[:1] == ["sudo"]:
        return view.deny("this machine's guard refuses sudo")
    return None


if __name__ == "__main__":
    plugin.run()

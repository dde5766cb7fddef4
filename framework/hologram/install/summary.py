"""What a plugin's manifest says it provides, requires and may do — read before a person confirms an add.

The manifest declares no file or network permissions (a plugin process runs with the rights of the user
who starts the kernel: it can read and write that user's files and reach the network), so the summary
says that plainly, then what the manifest does declare that bears on trust: how it runs (a process of its
own, or inside the kernel), the tools that need approval, the kernel facilities it asks for (each grants
something), its environment variables and its stage hooks.

Each of those is an `Ask`: the sentence a terminal prints, and its kind and values, so a client that speaks
another language (the web page, in Chinese) words it itself and falls back to the sentence for a kind it does
not know. tests/web/test_plugin_strings.py holds the page's English wording to these sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hologram.manifest import LoadedManifest
from hologram.manifest.facility import KERNEL

#: What each kernel facility lets a plugin do (docs/protocol.md, "Kernel administration facilities").
KERNEL_GRANTS = {
    "kernel.events": "publish events to every plugin",
    "kernel.llm": "read and change your LLM providers (never their keys)",
    "kernel.memory": "search what memory holds across sessions",
    "kernel.observe": "watch every turn's events",
    "kernel.plugins": "start, stop, add and remove plugins, read their logs",
    "kernel.sessions": "list and read your conversations",
    "kernel.settings": "read the kernel's settings",
    "kernel.tools": "list every plugin's tools",
    "kernel.turns": "start turns with the model on your behalf",
}


@dataclass(frozen=True)
class Ask:
    """One thing a plugin may do: `kind` (process, inproc, approval, grant, env, stages), the values it names
    (tools, variables, stages) or the kernel facility it grants, and the sentence itself."""

    kind: str
    text: str
    names: tuple[str, ...] = ()
    facility: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "names": list(self.names), "facility": self.facility}


@dataclass(frozen=True)
class Summary:
    name: str
    version: str
    description: str
    source: str
    runs: str
    inproc: bool
    command: str
    """What runs: `python -m MODULE`, the command, or the in-process module."""
    provides: tuple[str, ...]
    requires: tuple[str, ...]
    tools: tuple[str, ...]
    approval_tools: tuple[str, ...]
    asks: tuple[Ask, ...]
    """Each thing this plugin may do that a person should know."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "source": self.source,
            "runs": self.runs,
            "inproc": self.inproc,
            "command": self.command,
            "provides": list(self.provides),
            "requires": list(self.requires),
            "tools": list(self.tools),
            "approval_tools": list(self.approval_tools),
            "asks": [a.text for a in self.asks],
            "may": [a.to_json() for a in self.asks],
        }

    def lines(self) -> list[str]:
        """For a terminal: the plugin, then each fact indented."""
        out = [f"{self.name} {self.version}" + (f" — {self.description}" if self.description else "")]
        out.append(f"  from      {self.source}")
        out.append(f"  runs      {self.runs}")
        out.append(f"  provides  {', '.join(self.provides) or 'nothing'}")
        out.append(f"  requires  {', '.join(self.requires) or 'nothing'}")
        out.append(f"  tools     {', '.join(self.tools) or 'none'}")
        for ask in self.asks:
            out.append(f"  may       {ask.text}")
        return out


def summarise(loaded: LoadedManifest) -> Summary:
    manifest = loaded.manifest
    run = manifest.plugin.run
    if run.inproc is not None:
        command = run.inproc
        runs = f"inside the kernel process (in-process module {command})"
    else:
        command = f"python -m {run.module}" if run.module is not None else " ".join(run.command or [])
        runs = f"its own process: {command}"
    asks = []
    if run.inproc is not None:
        text = "run code inside the kernel, with everything the kernel holds (provider keys included)"
        asks.append(Ask("inproc", text))
    else:
        text = "read and write your files and reach the network (a plugin process has your user's rights)"
        asks.append(Ask("process", text))
    approval = tuple(t.name for t in manifest.tools if t.needs_approval)
    if approval:
        asks.append(Ask("approval", f"call tools that need your approval each time: {', '.join(approval)}", approval))
    requires = tuple(manifest.facilities.requires)
    for req in manifest.facilities.required():
        if req.name.startswith(f"{KERNEL}.") and req.name in KERNEL_GRANTS:
            asks.append(Ask("grant", f"{KERNEL_GRANTS[req.name]} ({req.name})", facility=req.name))
    if run.env:
        names = tuple(sorted(run.env))
        asks.append(Ask("env", f"run with environment variables {', '.join(names)}", names))
    hooks = tuple(manifest.stages.hooked())
    if hooks:
        asks.append(Ask("stages", f"see and change every turn at the stages {', '.join(hooks)}", hooks))
    return Summary(
        name=manifest.plugin.name,
        version=manifest.plugin.version,
        description=manifest.plugin.description,
        source=loaded.source,
        runs=runs,
        inproc=run.inproc is not None,
        command=command,
        provides=tuple(manifest.facilities.provides),
        requires=requires,
        tools=tuple(t.name for t in manifest.tools),
        approval_tools=approval,
        asks=tuple(asks),
    )

"""The start of a conformance run explained: why a plugin did not become ready (no answer to ``initialize``, the
wrong protocol, an error answer, a facility never announced, an exit), and whether its handshake agrees with its
manifest (a hook for each declared stage, no hook the kernel would never call, tools that are objects with a name).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hologram.base import protocol
from hologram.testing.report import excerpt

if TYPE_CHECKING:
    from hologram.manifest import Manifest
    from hologram.testing.conformance import Run


def explain_start_failure(run: Run, manifest: Manifest) -> None:
    assert run.harness is not None and run.log is not None
    plugin = run.harness.plugin
    answer, log = plugin.handshake, run.log.tail()
    reason = re.sub(r"; restarting in [\d.]+ s$", "", plugin.reason)  # the harness stops it, it is not restarted
    timeout = manifest.start.timeout_s
    if answer is not None and answer.get("protocol") != protocol.PROTOCOL_VERSION:
        run.report.problem(
            "handshake",
            f"it answered initialize with protocol {answer.get('protocol')!r}; this kernel speaks "
            f"{protocol.PROTOCOL_VERSION}",
            the_plugin_answered=excerpt(answer),
            fix=f'answer initialize with "protocol": {protocol.PROTOCOL_VERSION} (docs/protocol.md, section 6); '
            "with the SDK, install matching versions of hologram and the plugin",
        )
    elif answer is None and "no answer to initialize" in reason:
        run.report.problem(
            "handshake",
            f"it never answered the initialize request within start.timeout_s = {timeout:g} s",
            kernel=reason,
            its_log=log,
            fix="read one JSON object per line on stdin and answer "
            '{"jsonrpc": "2.0", "id": <the request\'s id>, "result": {"protocol": 1, ...}} on stdout '
            "(docs/protocol.md, sections 1 and 6); with the SDK, make sure the module calls plugin.run()",
        )
    elif answer is None and plugin.exit_description:
        run.report.problem(
            "handshake",
            "its process ended before it answered initialize",
            kernel=reason,
            its_log=log,
            fix="run the plugin's command by hand to see the error; a Python plugin that is not importable needs "
            "`pip install -e .` (or its src/ on PYTHONPATH)",
        )
    elif answer is None:
        run.report.problem(
            "handshake",
            "it answered initialize with an error",
            kernel=reason,
            its_log=log,
            fix="a configuration the plugin's model refuses: make the manifest's [config] agree with the model "
            "(`hologram check .` names the line); a failing start (state= or on_start): see its log",
        )
    elif "never announced" in reason or not plugin.exit_description:
        missing = sorted(set(run.harness.spec.provides) - plugin.ready_facilities) or ["NAME"]
        run.report.problem(
            "readiness",
            f"it answered initialize but never announced {', '.join(missing)} within start.timeout_s = {timeout:g} s",
            kernel=reason,
            its_log=log,
            fix=f'send {{"jsonrpc": "2.0", "method": "facility/ready", "params": {{"facility": "{missing[0]}"}}}} '
            "once it can serve (docs/protocol.md, section 6); with the SDK this happens when on_start returns, "
            f'unless plugin.auto_ready = False: then call `await plugin.ready("{missing[0]}")`',
        )
    else:
        run.report.problem(
            "readiness",
            "its process ended after initialize, before every facility was ready",
            kernel=reason,
            its_log=log,
            fix="see the log above: start code that fails after the handshake ends the plugin",
        )


def check_handshake(run: Run, manifest: Manifest) -> None:
    assert run.harness is not None
    answer = run.harness.plugin.handshake or {}
    problems = 0
    declared = set(manifest.stages.hooked())
    listed = answer.get("stages") or []
    if not isinstance(listed, list):
        listed = []
    for stage in sorted(declared - set(listed)):
        problems += 1
        run.report.problem(
            "handshake",
            f"the manifest hooks {stage!r} in [stages], but its initialize answer does not list a hook for it",
            the_plugin_answered=f"stages = {excerpt(listed)}",
            fix=f'define the hook (SDK: @plugin.stage("{stage}")) or remove {stage} from [stages]: the kernel '
            "calls every declared hook on every turn and would get 'method not found'",
        )
    for stage in sorted(set(map(str, listed)) - declared):
        problems += 1
        unknown = stage not in protocol.STAGE_NAMES
        run.report.problem(
            "handshake",
            f"it has a hook for {stage!r}, which "
            + ("is not a stage" if unknown else "the manifest does not declare in [stages]: it is never called"),
            the_plugin_answered=f"stages = {excerpt(listed)}",
            fix=f"stages are {', '.join(protocol.STAGE_NAMES)}"
            if unknown
            else f"add `{stage} = {{ order = 100 }}` under [stages] in the manifest, or remove the hook",
        )
    tools = answer.get("tools") or []
    for tool in tools if isinstance(tools, list) else [tools]:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            problems += 1
            run.report.problem(
                "handshake",
                "its initialize answer lists a tool that is not an object with a name",
                the_plugin_answered=f"tools = {excerpt(tools)}",
                fix='each tool is {"name", "description", "parameters" (a JSON Schema of type object)} '
                "(docs/protocol.md, section 7)",
            )
    if not problems:
        sdk = answer.get("sdk")
        run.report.passed.append(f"handshake (protocol {protocol.PROTOCOL_VERSION}{f', {sdk}' if sdk else ''})")

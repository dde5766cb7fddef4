"""The config error corpus: 412 settings files and manifests, most of them wrong in one value, fed to the readers
`hologram up` and `hologram check` use; prints what each gives (the rendered error, or the validated model), so
two trees can be diffed. Made to hold the move back to pydantic (issue 34) to the wording users had:

    .venv/bin/python tools/config_corpus.py . > new.txt
    PYTHONPATH=/tmp/old/framework:/tmp/old/plugins .venv/bin/python tools/config_corpus.py /tmp/old > old.txt
    diff old.txt new.txt && grep -c sk-SECRET new.txt   # no difference; the key only where it is not a key

(``/tmp/old``: ``git archive OLD | tar -x -C /tmp/old``.) The argument is the tree whose manifests/notes.toml is
varied."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

from hologram.base.errors import HologramError
from hologram.config.settings import load_settings
from hologram.manifest import parse_manifest

BAD = ['"x"', "-1", "0", "4.5", "[1]", "{ a = 1 }", "true", '""', '"sk-SECRET"', "1e400"]
SETTINGS_KEYS = {
    "agent": [
        "max_steps",
        "system_prompt",
        "tool_timeout_s",
        "defer_tools",
        "channel",
        "colour",
        "loop_repeats",
        "max_tool_calls",
        "max_turn_s",
    ],
    "llm": ["cooldown_s", "max_cooldown_s", "auth_cooldown_s"],
    "approvals": ["default", "timeout_s"],
    "memory": ["embedder"],
    "memory.cooling": ["enabled", "max_accesses", "idle_hours", "batch_events", "interval_hours", "extractor"],
    "memory.graph": ["backend", "recall", "recall_share", "hops"],
    "memory.scenes": ["enabled", "half_life_days", "floor"],
}
PROVIDER = ["name", "kind", "base_url", "model", "api_key", "api_key_env", "context_window", "timeout_s", "max_retries"]
out = []
with tempfile.TemporaryDirectory() as d:
    data = Path(d)

    def settings(text):
        (data / "settings.toml").write_text(text)
        try:
            s = load_settings(data)
            return "ok " + json.dumps(s.model_dump(mode="json", exclude={"path"}), sort_keys=True, default=str)
        except HologramError as e:
            return e.render().replace(str(data), "<D>")

    for table, keys in SETTINGS_KEYS.items():
        for k in keys:
            for v in BAD:
                out.append(settings(f"[{table}]\n{k} = {v}\n"))
    for k in PROVIDER:
        for v in BAD:
            base = {"name": '"a"', "base_url": '"http://x"', "model": '"m"'}
            base[k] = v
            out.append(settings("[[providers]]\n" + "".join(f"{a} = {b}\n" for a, b in base.items())))
    manifest = (Path(sys.argv[1]) / "manifests" / "notes.toml").read_text()

    def man(text):
        try:
            m = parse_manifest(text, "m.toml")
            return "ok " + json.dumps(m.model_dump(mode="json"), sort_keys=True, default=str)[:300]
        except HologramError as e:
            return e.render()

    for pat, key in [
        (r'^name = "notes"', "name"),
        (r'^version = "0.1.0"', "version"),
        (r"^timeout_s = 15", "timeout_s"),
        (r"^parallel_safe = false", "parallel_safe"),
        (r"^deferred = true", "deferred"),
        (r'^folder = "notes".*', "folder"),
        (r'^description = "Markdown notes.*', "description"),
    ]:
        for v in BAD:
            out.append(man(re.sub(pat, f"{key} = {v}", manifest, count=1, flags=re.M)))
    out.append(man(manifest.replace("[start]", '[start]\nrestart = "sometimes"\ncolour = 1')))
    out.append(man(manifest.replace('provides = ["notes.store@1"]', 'provides = ["Notes store"]')))
print(len(out), file=sys.stderr)
print("\n=====\n".join(out))

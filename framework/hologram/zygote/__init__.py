"""The zygote process's own code: a fork server for `run.module` plugins (see docs/architecture.md).

Kept outside `hologram.supervisor` on purpose: importing that package pulls in the kernel (manifests,
pydantic …), ~0.7 s of imports that the zygote would pay once and every forked plugin would carry in memory.
The kernel's side of the conversation is `hologram.supervisor.zygote`.
"""

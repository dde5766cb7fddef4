"""The http plugin sends itself its first requests before it says ready (hologram_plugins/http/warm.py, issue 39
item 9): a real `hologram up`, the http plugin forked from the zygote, the first request a client sends after
"ready" measured in the plugin's own process.

What the warm-up takes off the first request is copy-on-write: the first request a forked process serves writes
into ~200 pages it shares with the zygote (reference counts, bytecode counters), one minor fault each. Minor
faults are counted by the kernel (/proc/PID/stat), not timed, so the test holds on a faster or slower machine.

Mutation check (done): without the `warm` call in `hologram_plugins.http.start` the first ``GET /v1/models``
after ready took 190-230 minor faults in the http process (later ones 1-6) and
``test_the_first_request_after_ready_copies_no_more_pages_than_a_later_one`` is red.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_llm import MockLLM

from .kernel import HttpKernel

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")]

FIRST_FAULTS_MAX = 60  # with the warm-up 2-30 (the same as later requests, plus what a new connection takes)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("first-request"), mock)
    k.start()
    yield k
    k.stop()


def minor_faults(pid: int) -> int:
    """Minor page faults of `pid` so far (/proc/PID/stat field 10)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[7])


def http_pid(kernel: HttpKernel) -> int:
    return int(next(p["pid"] for p in kernel.status()["plugins"] if p["name"] == "http"))


def test_the_first_request_after_ready_copies_no_more_pages_than_a_later_one(kernel: HttpKernel) -> None:
    pid = http_pid(kernel)
    faults = []
    with kernel.client() as client:
        for _ in range(4):
            before = minor_faults(pid)
            response = client.get("/v1/models")
            faults.append(minor_faults(pid) - before)
            assert response.status_code == 200, response.text
    first, later = faults[0], faults[1:]
    assert first <= FIRST_FAULTS_MAX, f"the first request took {first} minor faults in http, later ones {later}"


def test_the_warm_up_starts_no_turn_and_no_session(kernel: HttpKernel, mock: MockLLM) -> None:
    assert mock.requests == []  # nothing reached the provider
    with kernel.client() as client:
        listed = client.get("/api/sessions")
    assert listed.status_code == 200, listed.text
    assert listed.json()["sessions"] == []
    assert "warming the request path" not in kernel.logs()  # it worked (a failure logs at debug, if logged at all)

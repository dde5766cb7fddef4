"""Shared fixtures. Each block below belongs to the area named in its comment; append, don't rewrite."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

# --- kit: the helpers every suite shares (tests/kit/README.md); its fixtures are registered here ----------

pytest_plugins = ["tests.kit.mock_llm"]


# --- hypothesis: no test may depend on how fast the machine runs an example -------------------------------

# Hypothesis' defaults are timings: a 200 ms deadline per example and the too_slow health check on data
# generation. On a machine several times slower than the one a test was written on (or under load) they fail
# a correct test; what the property tests check is the property, so neither timing applies to them.
settings.register_profile("hologram", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hologram")

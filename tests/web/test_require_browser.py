"""Without the system browser the browser tests skip and say why — except under HOLOGRAM_REQUIRE_BROWSER=1
(`.ci/run`), where they fail, so CI cannot pass by skipping. No browser is needed to check this.

Mutation check (done): making `require_browser` skip regardless of the variable turns the second test red."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web import browser


def test_a_missing_browser_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv("HOLOGRAM_REQUIRE_BROWSER", raising=False)
    with pytest.raises(BaseException) as outcome:
        browser.require_browser()
    assert outcome.type is pytest.skip.Exception
    assert "apt-get install chromium chromium-driver" in str(outcome.value)


def test_a_missing_browser_fails_when_required(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setenv("HOLOGRAM_REQUIRE_BROWSER", "1")
    with pytest.raises(BaseException) as outcome:  # a skip is caught too, and fails the assertion below
        browser.require_browser()
    assert outcome.type is pytest.fail.Exception
    assert "HOLOGRAM_REQUIRE_BROWSER=1" in str(outcome.value)

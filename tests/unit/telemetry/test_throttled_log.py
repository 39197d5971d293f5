"""ThrottledLog: the first message of a kind at once, then at most once per interval."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from gw.telemetry.throttled_log import ThrottledLog, error_kind


def test_each_kind_is_logged_at_most_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    log = ThrottledLog(logging.getLogger("gw.test"), interval=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="gw.test"):
        assert log.warning("failed %d", 1, kind="write")
        assert not log.warning("failed %d", 2, kind="write")
        assert log.warning("other %d", 1, kind="other")  # kinds are throttled apart
        now[0] += 59.0
        assert not log.warning("failed %d", 3, kind="write")
        now[0] += 1.0
        assert log.log(logging.ERROR, "failed %d", 4, kind="write")
    assert [r.getMessage() for r in caplog.records] == ["failed 1", "other 1", "failed 4"]
    assert caplog.records[-1].levelno == logging.ERROR


def test_error_kind_is_the_type_and_sqlite_name_never_the_message() -> None:
    assert error_kind(RuntimeError("prompt text")) == "RuntimeError"
    error = sqlite3.OperationalError("database is locked: prompt text")
    error.sqlite_errorname = "SQLITE_BUSY"
    assert error_kind(error) == "OperationalError (SQLITE_BUSY)"

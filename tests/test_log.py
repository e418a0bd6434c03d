"""RateLimited: one event at most once per interval, with the held-back count."""

import structlog
from structlog.testing import capture_logs

from hild.log import LOG_INTERVAL_S, RateLimited


class FakeClock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_rate_limited_logs_first_suppresses_within_interval_and_counts():
    clock = FakeClock()
    limited = RateLimited(structlog.get_logger("test"), "thing.happened", clock=clock)
    with capture_logs() as logs:
        assert limited(k=0) is True  # the first is logged at once
        for k in range(1, 4):
            clock.t += 1.0
            assert limited(k=k) is False  # within the interval: counted, not logged
        assert limited.suppressed == 3
        clock.t = 100.0 + LOG_INTERVAL_S  # the interval has passed
        assert limited(k=4) is True
        assert limited.suppressed == 0
        clock.t += 1.0
        assert limited(k=5) is False
    assert logs == [
        {"event": "thing.happened", "log_level": "warning", "suppressed": 0, "k": 0},
        {"event": "thing.happened", "log_level": "warning", "suppressed": 3, "k": 4},
    ]


def test_rate_limited_takes_an_explicit_timestamp_and_level():
    def clock() -> float:
        raise AssertionError("the clock is not read when now is given")

    limited = RateLimited(
        structlog.get_logger("test"), "bus.rejected", interval_s=2.0, level="info", clock=clock
    )
    with capture_logs() as logs:
        assert limited(0.0, reason="a") is True
        assert limited(1.9, reason="b") is False
        assert limited(now=2.0, reason="c") is True
    assert [(e["reason"], e["suppressed"], e["log_level"]) for e in logs] == [
        ("a", 0, "info"),
        ("c", 1, "info"),
    ]

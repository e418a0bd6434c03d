"""RateLimited: one event at most once per interval, with the held-back count."""

import json

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


def test_a_json_log_line_has_no_nan_or_infinity_strict_parsers_refuse():
    """A sensor fault without end logged "end": Infinity (Python's, no JSON): such numbers are
    written as null, wherever they sit in the event."""
    from hild.log import json_line

    def strict(text: str):
        def refuse(name: str):
            raise ValueError(f"{name} is no JSON")

        return json.loads(text, parse_constant=refuse)

    event = {
        "event": "control.fault",
        "fault": {"start": 0.5, "end": float("inf")},
        "values": [1.0, float("nan"), (-float("inf"), 2)],
        "t": 3.25,
    }
    assert strict(json_line(event)) == {
        "event": "control.fault",
        "fault": {"start": 0.5, "end": None},
        "values": [1.0, None, [None, 2]],
        "t": 3.25,
    }
    assert json_line({"t": 1.5, "n": 2}) == json.dumps({"t": 1.5, "n": 2})  # the rest as before

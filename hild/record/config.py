"""What to record: the bench's ``[record]`` table, or ``--record FILE``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from hild.config import MISSING, ConfigError, Problems, Section
from hild.names import TemplateError, fill_template

# `hild run`'s exit status when the run went on to its end but its recording failed part-way
# (a full disk, a file-size limit): not a clean run (0), nor a failed run (1), nor a
# configuration error (2)
EXIT_RECORDING_FAILED = 3
DEFAULT_RATE_HZ = 20.0  # truth samples per simulated second: above the hulls' fastest modes
# What a recording's name may hold, filled when the recording starts: the bench's name (or,
# for `hild sim`, which has no bench, the profile's) and the start in UTC as utc_stamp writes it.
RUN_PLACEHOLDERS = ("bench", "utc")  # [record] file, hild run and hild scenario run --record
SIM_PLACEHOLDERS = ("profile", "utc")  # hild sim --record


def utc_stamp(when: datetime) -> str:
    """``{utc}`` in a recording's name: 20260601T120000Z."""
    return when.strftime("%Y%m%dT%H%M%SZ")


def filled_name(template: Path, values: dict[str, str], start: datetime | None = None) -> Path:
    """A recording's name with its placeholders filled: ``values`` ({bench} or {profile}) and
    ``{utc}`` (``start``, by default now). TemplateError (hild.names) for a name that would
    leave its folder or holds another placeholder."""
    stamp = utc_stamp(start or datetime.now(UTC))
    return Path(fill_template(str(template), {**values, "utc": stamp}))


@dataclass(frozen=True)
class RecordConfig:
    file: Path  # the MCAP file; the sentences go beside it to <stem>.nmea.log
    rate_hz: float = DEFAULT_RATE_HZ  # state, actuators, environment, location and pose
    nmea_log: bool = True  # also write the Signal K multiplexed log of the sentences
    bench_file: str = ""  # the bench whose [record] table named the file; "" for --record

    def unwritable(self, path: Path, reason: str) -> ConfigError:
        """The error for a recording that cannot be opened, blamed on whoever named it."""
        expected = f"a file that can be written ({reason})"
        if self.bench_file:
            return ConfigError(
                self.bench_file, "record.file", str(self.file), f"{expected}: {path}"
            )
        return ConfigError(f"--record {path}", "", MISSING, expected)

    @classmethod
    def for_file(cls, file: Path, loop_rate_hz: float) -> RecordConfig:
        """``--record FILE`` with no [record] table: the defaults, at most the loop's rate."""
        return cls(file, rate_hz=min(DEFAULT_RATE_HZ, loop_rate_hz))

    @classmethod
    def chosen(
        cls, table: RecordConfig | None, record_file: str | None, loop_rate_hz: float
    ) -> RecordConfig | None:
        """What a run records: the bench's [record] table (``table``), its file replaced by
        ``--record FILE`` when one is given (the table's rate and log kept); ``--record`` alone
        records with the defaults; None when there is neither."""
        if not record_file:
            return table
        if table is None:
            return cls.for_file(Path(record_file), loop_rate_hz)
        return replace(table, file=Path(record_file), bench_file="")


def read_record(section: Section, loop_rate_hz: float) -> RecordConfig:
    """The ``[record]`` table: ``file``, ``rate_hz`` (up to the loop's rate), ``nmea_log``;
    every problem of it at once (a MultipleConfigError)."""
    problems = Problems()
    file = problems.attempt(_file, section, default="")
    default = RecordConfig.for_file(Path(file), loop_rate_hz)
    rate_hz = problems.attempt(
        lambda: section.number("rate_hz", default.rate_hz, lo=0.1, hi=loop_rate_hz, unit="Hz")
    )
    nmea_log = problems.attempt(section.boolean, "nmea_log", default.nmea_log)
    problems.attempt(section.finish)
    problems.raise_any()
    return replace(default, rate_hz=rate_hz, nmea_log=nmea_log, bench_file=str(section.file))


def _file(section: Section) -> str:
    file = section.string("file")
    problem = file_problem(file)
    if problem is not None:
        raise section.error("file", file, problem)
    return file


def file_problem(file: str, placeholders: tuple[str, ...] = RUN_PLACEHOLDERS) -> str | None:
    """What is wrong with ``file`` as a recording's name ([record] file, --record), said as
    what was expected; None if nothing. Said before the run, not when its ports are open.
    ``placeholders``: what the name may hold (any other ``{name}`` is refused)."""
    if not file.strip() or "\0" in file:
        return "a file name for the recording, e.g. 'run.mcap'"
    stand_ins = {
        key: utc_stamp(datetime(2026, 1, 1, tzinfo=UTC)) if key == "utc" else key
        for key in placeholders
    }
    try:  # the template's own text may lead out of its folder whatever the name: said now
        fill_template(file, stand_ins)
    except TemplateError as e:
        filled = " and ".join("{" + key + "}" for key in placeholders)
        return f"a file name that stays in its folder, with {filled} filled ({e})"
    if "{" not in file and Path(file).is_dir():  # (which the run would refuse to open)
        return "a file name for the recording, not a folder (e.g. 'run.mcap' in it)"
    return None

"""Reading the files of profiles/: vessel profiles and weather presets, into the core's
frozen records."""

from hild.builtin import builtin_candidates, builtin_folder
from hild.config import FileKind

BENCH_DIR = builtin_folder("profiles/bench")  # the built-in benches
BENCHES = FileKind(
    "bench", "name", BENCH_DIR, builtin="bench", searched=builtin_candidates("profiles/bench")
)
SCENARIO_DIR = builtin_folder("profiles/scenarios")  # the built-in scenarios
SCENARIOS = FileKind(
    "scenario",
    "name",
    SCENARIO_DIR,
    env_var="HILD_SCENARIO_PATH",
    builtin="scenario",
    searched=builtin_candidates("profiles/scenarios"),
)
ARDUPILOT_DIR = builtin_folder("profiles/ardupilot")  # ArduPilot Rover parameters per profile
ARDUPILOT_PARAMS = FileKind(
    "ArduPilot parameter file",
    "name",
    ARDUPILOT_DIR,
    builtin="ArduPilot parameter file",
    searched=builtin_candidates("profiles/ardupilot"),
    suffix=".parm",
)

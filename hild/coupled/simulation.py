"""A vessel in motion: the state arrays, the commands, and stepping them through the core."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hild.coupled.loop import record_outputs, run_kernel, tick_kernel
from hild.environment import layout as EL
from hild.environment.kernel import ENVIRONMENT_KERNELS, SEA_ANY, SEA_CALM, sea_of
from hild.model import layout as L
from hild.model.actuators import actuator_forces
from hild.model.dynamics import W_SIZE
from hild.model.integrators import WORK_SIZE
from hild.model.layout import METHODS
from hild.model.stability import state_problem
from hild.model.vessel import DEGREES, Vessel

if TYPE_CHECKING:
    from hild.environment.environment import Environment
    from hild.traffic.targets import Target
    from hild.traffic.traffic import Traffic

COMMAND_SLOTS = {"rpm": L.S_SPEED, "cmd": L.S_SPEED, "deflector": L.S_DEFLECTOR}


class CommandError(ValueError):
    """An actuator command that names an unknown actuator or command."""


class DivergedError(RuntimeError):
    """A run whose state left what a vessel can be in (see hild/model/stability.py
    state_problem): at simulation time ``t`` [s], ``problem`` says how; ``advice`` what to
    try."""

    def __init__(self, t: float, problem: str, advice: str = ""):
        super().__init__(t, problem, advice)
        self.t, self.problem, self.advice = t, problem, advice

    def __str__(self) -> str:
        text = f"the run stopped at t = {self.t:.2f} s: {self.problem}"
        return f"{text}. {self.advice}" if self.advice else text


class Simulation:
    """One vessel integrated at a fixed step, faster than real time or tick by tick.

    Buffers are allocated here once; ``tick()`` and ``advance()`` allocate
    nothing per step in the compiled core.
    """

    def __init__(
        self,
        vessel: Vessel,
        dt: float = 0.01,
        method: str = "rk4",
        environment: Environment | None = None,
        weather_may_change: bool = False,
    ):
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
        if not dt > 0.0:
            raise ValueError(f"dt must be positive, not {dt!r}")
        self.vessel = vessel
        self.dt = float(dt)
        self.method = METHODS[method]
        self.method_name = method
        self.t = 0.0
        self.steps = 0
        self.x = np.zeros(L.X_SIZE)
        # the step keeps its actuators' lag factors in them (layout A_LAG): this simulation's
        # own copy, the vessel's stays as packed
        self.actuator_params = vessel.actuator_params.copy()
        n = vessel.n_act
        self.act_state = np.zeros(n * L.S_SIZE)
        self.act_cmd = np.zeros_like(self.act_state)
        for a in vessel.actuators:
            self.act_state[a.index * L.S_SIZE : (a.index + 1) * L.S_SIZE] = a.initial
        self.act_cmd[:] = self.act_state
        self.env = np.zeros(L.I_SIZE)
        self._work = np.zeros(WORK_SIZE)
        self._w = np.zeros(W_SIZE)
        self._inp = np.zeros(L.I_SIZE)
        self._tau_act = np.zeros(6)
        if environment is not None:
            self._check_fits(environment)
        # a daemon's weather can change as it runs: its environment kernels take any sea (and
        # are compiled before its clock starts); a fixed weather's take only its own
        self.weather_may_change = weather_may_change
        self._use(environment)
        self.traffic: Traffic | None = None  # other ships, stepped with this one by tick()
        self._x_before = np.zeros(L.X_SIZE)  # the state at the start of a tick (for traffic)
        self._no_environment = (np.zeros(0), np.zeros((EL.W_ROWS, 0)))
        self._no_noise = np.zeros((EL.N_CHANNELS, 1))

    @property
    def actuator_force(self) -> np.ndarray:
        """The actuators' generalized force of the last step, body frame [N, N m] (a view)."""
        return self._tau_act

    # --- commands -----------------------------------------------------------------
    def command_slot(self, name: str) -> tuple[int, float]:
        """Index into the command array and the factor to SI units for a name like ``port.rpm``."""
        problem = self.vessel.command_problem(name)
        if problem:
            raise CommandError(f"{name}: expected {problem}")
        actuator, _, command = name.partition(".")
        spec = self.vessel.actuator(actuator)
        if command.endswith("_deg"):
            return spec.index * L.S_SIZE + L.S_ANGLE, DEGREES
        return spec.index * L.S_SIZE + COMMAND_SLOTS[command], 1.0

    def set_command(self, name: str, value: float) -> None:
        """Set an actuator command by name, e.g. ``port.rpm`` or ``starboard.nozzle_deg``."""
        slot, scale = self.command_slot(name)
        value = float(value)
        if not math.isfinite(value):
            raise CommandError(f"command {name} must be a finite number, not {value!r}")
        self.act_cmd[slot] = value * scale

    # --- environment -----------------------------------------------------------------
    def set_current(self, north: float, east: float) -> None:
        """Current velocity in NED [m/s] (irrotational, constant over the next steps).

        With an environment the weather's current replaces it at the next step.
        """
        self.env[L.I_CURRENT] = north
        self.env[L.I_CURRENT + 1] = east

    def set_external_force(self, tau: np.ndarray) -> None:
        """Body-frame generalized force applied besides the actuators and the environment."""
        self.env[L.I_EXTERNAL : L.I_EXTERNAL + 6] = tau

    def _check_fits(self, environment: Environment) -> None:
        if environment.dt != self.dt or environment.vessel is not self.vessel:
            raise ValueError("the environment was built for another step or vessel")

    def _use(self, environment: Environment | None) -> None:
        """Take ``environment`` and the kernels its sea needs (a calm sea's never compile the
        wave code)."""
        self.environment = environment
        if self.weather_may_change:
            self._sea = SEA_ANY
        else:
            self._sea = SEA_CALM if environment is None else sea_of(environment.B)
        self._env_outputs = ENVIRONMENT_KERNELS[self._sea][0]
        self._tick = tick_kernel(self.method, self._sea)

    def adopt_environment(self, environment: Environment) -> None:
        """Swap in a new environment (built off the tick, see Environment.continue_from)."""
        self._check_fits(environment)
        self._use(environment)
        self.update_environment()

    def restep(self, dt: float, environment: Environment) -> None:
        """Take steps of ``dt`` from the start, in ``environment`` (built for that step): only
        before the first step (ArduPilot's frames say the step when they come: the world's
        ``follow_rate``). The state arrays stay the same objects (their views stay true); the
        actuators' lag factors follow the step by themselves."""
        if self.steps:
            raise RuntimeError(
                f"the step is fixed once stepped ({self.steps} steps of {self.dt} s)"
            )
        if not dt > 0.0:
            raise ValueError(f"dt must be positive, not {dt!r}")
        self.dt = float(dt)
        self._check_fits(environment)
        self._use(environment)
        self.update_environment()

    def update_environment(self) -> None:
        """Evaluate the environment for the present state (the step does it too; idempotent)."""
        env = self.environment
        if env is not None:
            self._env_outputs(env.B, env.W, self.steps, self.x, self.dt, self.env)

    # --- traffic ----------------------------------------------------------------------------
    def add_traffic(self, targets: Sequence[Target]) -> None:
        """Other ships around this one, placed against its present state (encounters) and
        stepped with it by ``tick()`` (``advance()`` steps the own ship alone)."""
        from hild.traffic.traffic import Traffic  # (its kernel compiles only for a run with it)

        if self.traffic is None:
            self.traffic = Traffic(targets, self.x, self.t)
        else:
            for target in targets:
                self.traffic.add(target, self.x, self.t)

    def add_target(self, target: Target) -> None:
        self.add_traffic((target,))

    # --- stepping -----------------------------------------------------------------------
    def tick(self, step_traffic: bool = True) -> None:
        """Advance one step (the real-time loop's call); the environment follows to the new time.
        One compiled call (hild/coupled/loop.py tick_kernel), the same arithmetic as
        ``advance(1)``. ``step_traffic=False``: the traffic is not stepped here (a fleet's world
        steps it once every boat has stepped, against them all: Traffic.tick_fleet)."""
        traffic = self.traffic if step_traffic else None
        v = self.vessel
        env = self.environment
        if env is not None:
            j, _ = env.noise_window(1)
            B, W, noise = env.B, env.W, env.noise
        else:
            (B, W), j, noise = self._no_environment, 0, self._no_noise
        t_before = self.t
        if traffic is not None:  # the own ship at t, which the traffic is judged against
            np.copyto(self._x_before, self.x)
        self._tick(
            self.steps,
            self.x,
            v.params,
            self.actuator_params,
            v.n_act,
            self.act_state,
            self.act_cmd,
            self.env,
            self._inp,
            self._tau_act,
            self.dt,
            self._work,
            self._w,
            B,
            W,
            noise,
            j,
        )
        if env is not None:
            env.cursor += 1
        self.steps += 1
        self.t = self.steps * self.dt
        if traffic is not None:  # the targets from t to t + dt, then their geometry (the
            # environment at t + dt, evaluated in the tick above, reads neither them nor it)
            traffic.tick(self._x_before, self.x, self.dt, t_before, self.t)

    def tick_track(
        self, n: int, rows: np.ndarray, row0: int, stop: tuple[float, float, float] | None = None
    ) -> int:
        """Up to ``n`` calls of ``tick()`` in compiled calls, the same run bit for bit, writing
        after each tick the row (t, north, east, down, roll) into ``rows[row0 + i]``. With
        ``stop`` (north, east, r2), it ends after the first tick ending within sqrt(r2) of
        that point. Returns the ticks done."""
        from hild.coupled.ticks import no_targets, ticks_kernel

        v, env, traffic = self.vessel, self.environment, self.traffic
        B, W = self._no_environment if env is None else (env.B, env.W)
        if traffic is not None:
            T, TP, WP, n_targets = traffic.T, traffic.P, traffic.WP, traffic.n
        else:
            (T, TP, WP), n_targets = no_targets(), 0
        stop_n, stop_e, stop_r2 = stop if stop is not None else (0.0, 0.0, -1.0)
        ticks = ticks_kernel(self.method, self._sea)
        done = 0
        while done < n:
            if env is not None:
                j0, m = env.noise_window(n - done)
                noise = env.noise
            else:
                j0, m, noise = 0, n - done, self._no_noise
            m = ticks(
                m,
                self.steps,
                self.x,
                v.params,
                self.actuator_params,
                v.n_act,
                self.act_state,
                self.act_cmd,
                self.env,
                self._inp,
                self._tau_act,
                self.dt,
                self._work,
                self._w,
                B,
                W,
                noise,
                j0,
                T,
                TP,
                WP,
                n_targets,
                self._x_before,
                rows,
                row0 + done,
                stop_n,
                stop_e,
                stop_r2,
            )
            if env is not None:
                env.cursor += m
            self.steps += m
            self.t = self.steps * self.dt
            done += m
            if traffic is not None:
                traffic.t = self.t
            if stop_r2 >= 0.0 and m and _within(rows[row0 + done - 1], stop_n, stop_e, stop_r2):
                break
        return done

    def advance(self, n_steps: int, record_every: int = 0) -> np.ndarray:
        """Advance n_steps in one compiled loop.

        Returns the rows recorded at every global step that is a multiple of
        ``record_every`` (so segments line up on one output grid).
        """
        v = self.vessel
        rows = n_steps // record_every + 1 if record_every > 0 else 0
        out = np.empty((rows, len(self.columns())))
        written = 0
        left = n_steps
        env = self.environment
        B, W = self._no_environment if env is None else (env.B, env.W)
        run = run_kernel(self.method, self._sea)
        while True:
            if env is not None:
                j0, n = env.noise_window(left)
                noise = env.noise
            else:
                j0, n, noise = 0, left, self._no_noise
            written += run(
                n,
                record_every,
                self.steps,
                self.x,
                v.params,
                self.actuator_params,
                v.n_act,
                self.act_state,
                self.act_cmd,
                self.env,
                self._inp,
                self._tau_act,
                self.dt,
                self._work,
                self._w,
                out[written:],
                B,
                W,
                noise,
                j0,
            )
            if env is not None:
                env.cursor += n
            self.steps += n
            self.t = self.steps * self.dt
            left -= n
            if left <= 0:
                break
        self.update_environment()
        return out[:written]

    def columns(self) -> list[str]:
        """Names of the columns of a recorded row."""
        cols = ["t", *L.STATE_NAMES]
        for a in self.vessel.actuators:
            cols.extend(a.state_columns)
        cols.extend(("X_act", "Y_act", "Z_act", "K_act", "M_act", "N_act"))
        if self.environment is not None:
            cols.extend(EL.OUTPUT_COLUMNS)
        return cols

    def row(self) -> np.ndarray:
        """The current state as one row in the layout of ``columns()``."""
        v = self.vessel
        actuator_forces(self.actuator_params, v.n_act, self.act_state, self._tau_act)
        parts: list[np.ndarray] = [np.array([self.t]), self.x, self.act_state, self._tau_act]
        if self.environment is not None:
            self.update_environment()
            row = np.zeros(len(EL.OUTPUT_COLUMNS) + 1)
            record_outputs(self.environment.B, row, 1)
            parts.append(row[1:])
        return np.concatenate(parts)

    def state_problem(self) -> str:
        """What makes the present state absurd ('' if nothing): not finite, faster than any
        boat, spinning or capsized (hild/model/stability.py). A run that reaches one has
        diverged; ``hild sim`` checks every recorded row."""
        return state_problem(self.x)

    def kinetic_energy(self) -> float:
        """0.5 nu^T M nu [J]."""
        nu = self.x[L.X_NU : L.X_NU + 6]
        return 0.5 * float(nu @ self.vessel.M @ nu)


def _within(row: np.ndarray, north: float, east: float, r2: float) -> bool:
    dn, de = float(row[1]) - north, float(row[2]) - east
    return dn * dn + de * de <= r2

"""Per-quantity sensor errors: white noise, bias, random-walk drift and quantization."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NoiseSpec:
    """Error model of one measured quantity, in that quantity's unit; all off by default."""

    white: float = 0.0  # standard deviation of independent noise per sample
    bias: float = 0.0  # constant offset
    random_walk: float = 0.0  # drift: standard deviation growth per sqrt(second)
    quantization: float = 0.0  # resolution step; 0 keeps full resolution


class QuantityNoise:
    """The running error of one scalar quantity, with its own random stream."""

    def __init__(self, spec: NoiseSpec, rng: np.random.Generator):
        self.spec = spec
        self.rng = rng
        self.drift = 0.0
        self._t_last: float | None = None

    def apply(self, value: float, t: float, offset: float = 0.0) -> float:
        """The value measured at ``t`` [s]: truth + bias + drift + offset + white, quantized."""
        spec = self.spec
        if spec.random_walk and self._t_last is not None and t > self._t_last:
            self.drift += (
                spec.random_walk * math.sqrt(t - self._t_last) * self.rng.standard_normal()
            )
        self._t_last = t
        value = value + spec.bias + self.drift + offset
        if spec.white:
            value += spec.white * self.rng.standard_normal()
        if spec.quantization:
            value = round(value / spec.quantization) * spec.quantization
        return value

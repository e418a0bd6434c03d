"""Shared fixtures: loaded profiles are reused across tests (loading is cheap, compiling is not)."""

import functools

import pytest

from hild.profiles.vessel import load_profile
from tests.mqtt_endpoints import Broker, Subscriber

PROFILES = ("odin", "jolner", "wamv", "otter", "blueboat")


@functools.cache
def vessel(name: str):
    return load_profile(name)


@pytest.fixture(params=PROFILES)
def profile_name(request):
    return request.param


@pytest.fixture
def broker(tmp_path):
    """A mosquitto of the test's own on a free port (tests/mqtt_endpoints.py)."""
    b = Broker(tmp_path)
    yield b
    b.close()


@pytest.fixture
def subscriber(broker):
    """A client subscribed to every topic of ``broker``."""
    s = Subscriber(broker.port)
    yield s
    s.close()

"""Shared fixtures: loaded profiles are reused across tests (loading is cheap, compiling is not)."""

import functools

import pytest

from hild.profiles.vessel import load_profile

PROFILES = ("odin", "jolner", "wamv", "otter")


@functools.cache
def vessel(name: str):
    return load_profile(name)


@pytest.fixture(params=PROFILES)
def profile_name(request):
    return request.param

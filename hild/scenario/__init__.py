"""Scenarios: a bench, a mission, the controller under test and criteria; a run's verdict.

file.py reads scenario files; controller.py is the in-process controller protocol and hild's
pilot written to it; lockstep.py runs a scenario in one process with its controller in
lockstep; external.py runs one with an external program (``command = [...]``) against the
real daemon, on ports moved for the run (wiring.py), its argv filled in (placeholders.py),
the program started and stopped by process.py; runs.py picks one of the two; track.py
records what the boat did and criteria.py judges it.
"""

"""Seeing and steering a run while it runs: ``hild ctl`` over a Unix socket in the run
directory (ctl.py serves it inside ``hild run``, client.py is the command), and the run's
status as one snapshot (status.py)."""

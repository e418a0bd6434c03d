"""The reference autopilot (`hild pilot`): LOS waypoint guidance, PID heading, PI speed.

It runs in its own process and talks to the daemon as any external controller
does: NMEA 0183 sensor sentences in, actuator command sentences out. The
control law (``angles``, ``guidance``, ``control``, ``mission``, ``autopilot``)
is pure and works in NED metres, radians and seconds of sentence time;
``actuation`` and ``wire`` turn its demands into a vessel's setpoints and
command sentences; ``decode`` and ``fixes`` turn sensor sentences into fixes;
``links``, ``runner`` and ``options`` do the I/O and the command line.
"""

"""The controller's bus: command sentences in, actuator demands out, a watchdog, feedback.

Pure code: decoders, the actuator mapping and the watchdog know nothing of ports or the
loop. A command device (``hild.bus.device``) turns each received line into at most one
control record; the daemon applies the records between two ticks.
"""

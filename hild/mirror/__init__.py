"""The MQTT mirror: a run's state on a broker for dashboards, and runtime control from it.

``config`` (what the bench and the command line say), ``payloads`` (what each topic carries),
``store`` (the latest value per topic), ``session`` (the broker), ``observer`` (the tick's side).
"""

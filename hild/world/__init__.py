"""The world: everything a run is (the simulation, the traffic, the devices, the control queue,
the observers), stepped one tick at a time by whichever driver owns time."""

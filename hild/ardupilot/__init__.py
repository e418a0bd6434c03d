"""ArduPilot's SITL flies hild's boats: the JSON physics backend.

ArduPilot's software-in-the-loop build sends its servo outputs to an external physics program
over UDP and waits for the vehicle's state in return, one answer per frame
(`libraries/SITL/examples/JSON/readme.md`, `libraries/SITL/SIM_JSON.cpp`; the measured details
are in the reference's protocols.md, "ArduPilot SITL JSON backend"). Here hild is that
physics: a bench device of type ``ardupilot-sitl`` (hild/ardupilot/link.py) paces the
daemon's loop, one step per frame, and everything else on the bench (NMEA out, MQTT, the
recording, traffic) runs on the same simulated clock.

- protocol.py: the servo frame and the JSON answer, as bytes;
- state.py: what the answer says (IMU, position, velocity, attitude, wind) from the state;
- servos.py: PWM to actuator demands (throttle and steering, or skid steering);
- link.py: the device, its socket and its session: one SITL's (its owner, duplicates, lost
  frames, restarts);
- pace.py: the daemon's ticks paced by frames instead of the clock.
"""

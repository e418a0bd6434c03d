"""Recording a run (MCAP and a Signal K log), and reading, plotting and replaying recordings."""

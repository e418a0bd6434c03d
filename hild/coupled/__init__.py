"""Where the vessel model and its environment meet: the coupled compiled loop and Simulation."""

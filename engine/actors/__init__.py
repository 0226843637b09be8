"""The partition simulation's transitions, split by the actor that makes them (mixins of engine.sim.Sim)."""

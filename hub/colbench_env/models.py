"""The action, observation and state of the ColBench environments (colbench-gym's own)."""

from colbench_gym.online.server import ColBenchAction, ColBenchObservation, ColBenchState

__all__ = ["ColBenchAction", "ColBenchObservation", "ColBenchState"]

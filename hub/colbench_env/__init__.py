"""ColBench for OpenEnv: ``ColbenchEnv`` (the client), ``ColBenchAction``, ``ColBenchObservation``.

``AutoEnv.from_env("colbench", base_url="http://host:8000")`` finds this package (installed as
``openenv-colbench_env``) and returns a :class:`ColbenchEnv`.
"""

from .client import ColbenchEnv
from .models import ColBenchAction, ColBenchObservation, ColBenchState

__all__ = ["ColBenchAction", "ColBenchObservation", "ColBenchState", "ColbenchEnv"]

"""ColBench Environment Client: one WebSocket session, i.e. one environment on the server.

    from colbench_env import ColbenchEnv, ColBenchAction

    with ColbenchEnv(base_url="http://localhost:8000").sync() as env:     # or .../backend, .../frontend
        result = env.reset(seed=3)                 # same seed (or task_index=...) -> same task and person
        result = env.step(ColBenchAction(message="What should an empty list give?"))
        result = env.step(ColBenchAction(message="I WANT TO ANSWER:\\ndef f(xs): ..."))
        print(result.reward, result.observation.info["tests_passed"])

A full server raises ``ServerCapacityError`` with the server's reason.
"""

from colbench_gym.online.client import ColBenchEnvClient, ServerCapacityError


class ColbenchEnv(ColBenchEnvClient):
    """The OpenEnv client of a ColBench server (the name ``AutoEnv`` looks for: ``ColbenchEnv``)."""


__all__ = ["ColbenchEnv", "ServerCapacityError"]

"""FastAPI application of the ColBench environments (OpenEnv's HTTP + WebSocket routes).

Serves ``/backend`` and ``/frontend`` (each an OpenEnv environment: ``/ws`` sessions, ``/reset``,
``/step``, ``/state``, ``/health``, ``/schema``, ``/metadata``, ``/mcp``) and one of them also at
``/``, where OpenEnv clients and ``openenv validate --url`` look (``COLBENCH_ROOT_ENV``, default
``backend``). Configuration by environment variables (what a Space or container sets):

* ``COLBENCH_ENVS`` — ``backend,frontend`` (default) or one of them;
* ``COLBENCH_ROOT_ENV`` — the env also served at ``/`` (default: the first of ``COLBENCH_ENVS``);
* ``COLBENCH_MAX_SESSIONS`` — WebSocket sessions per env (default 16);
* ``COLBENCH_SIMULATOR`` / ``COLBENCH_SIMULATOR_KWARGS`` (JSON) — the person (default offline);
* ``COLBENCH_BACKEND_TASKS`` / ``COLBENCH_FRONTEND_TASKS`` — task sources (default embedded:test);
* ``COLBENCH_REWARD_MODE`` (``success`` | ``fraction``), ``COLBENCH_SCORER`` (``auto`` | ``fallback``).

Run: ``uvicorn server.app:app --host 0.0.0.0 --port 8000``, ``python -m colbench_env.server.app``
or ``uv run --project . server``.
"""

from __future__ import annotations

import json
import os

from colbench_gym.online.server import create_colbench_app


def env_options() -> dict[str, dict]:
    """``gym.make`` options of each served env, from the environment variables above."""
    names = [n.strip() for n in os.environ.get("COLBENCH_ENVS", "backend,frontend").split(",") if n.strip()]
    common: dict = {"simulator": os.environ.get("COLBENCH_SIMULATOR", "offline")}
    if os.environ.get("COLBENCH_SIMULATOR_KWARGS"):
        common["simulator_kwargs"] = json.loads(os.environ["COLBENCH_SIMULATOR_KWARGS"])
    per_kind = {"backend": {"reward_mode": os.environ.get("COLBENCH_REWARD_MODE", "success")},
                "frontend": {"scorer": os.environ.get("COLBENCH_SCORER", "auto")}}
    return {name: {**common, **per_kind.get(name, {}), "tasks": os.environ.get(f"COLBENCH_{name.upper()}_TASKS")}
            for name in names}


_options = env_options()
app = create_colbench_app(_options, max_concurrent_envs=int(os.environ.get("COLBENCH_MAX_SESSIONS", "16")),
                          root=os.environ.get("COLBENCH_ROOT_ENV") or next(iter(_options)))


def main(host: str = "0.0.0.0", port: int = 8000) -> None:
    """Run the server (the ``server`` script of this package)."""
    import uvicorn

    uvicorn.run(app, host=host, port=port)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    main(host=args.host, port=args.port)

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
* ``COLBENCH_REWARD_MODE`` (``success`` | ``fraction``), ``COLBENCH_SCORER`` (``auto`` | ``fallback``);
* ``COLBENCH_HOST`` — the interface ``main()`` listens on (default ``127.0.0.1``: this machine only,
  like ``colbench serve``; ``0.0.0.0`` opens it to other machines, as the container does on purpose).

Run: ``python -m colbench_env.server.app [--host 0.0.0.0] [--port 8000]``, ``uv run --project . server``,
or ``uvicorn server.app:app --port 8000`` (uvicorn's own default host is loopback too; the Dockerfile
passes ``--host 0.0.0.0`` explicitly, since a container is reached from outside).
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


#: Where :func:`main` listens unless told otherwise: loopback, like ``colbench serve`` (the
#: environments run agents' code in a sandbox and spend simulator tokens; who may reach them is
#: the operator's explicit choice: ``--host 0.0.0.0`` or ``COLBENCH_HOST``).
DEFAULT_HOST = "127.0.0.1"


def listen_host(host: str | None = None) -> str:
    """``host`` if given, else ``COLBENCH_HOST``, else loopback."""
    return host or os.environ.get("COLBENCH_HOST") or DEFAULT_HOST


def main(host: str | None = None, port: int = 8000) -> None:
    """Run the server (the ``server`` script of this package) on :func:`listen_host`."""
    import uvicorn

    uvicorn.run(app, host=listen_host(host), port=port)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=None,
                        help=f"interface to listen on (default: COLBENCH_HOST, else {DEFAULT_HOST}: this machine only; "
                             "0.0.0.0 for other machines)")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    main(host=args.host, port=args.port)

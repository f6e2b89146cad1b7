"""``colbench serve``: both ColBench environments as OpenEnv servers on one port.

Routes (OpenEnv's, under each env's prefix): ``/backend/ws`` and ``/frontend/ws`` (WebSocket
sessions, one env each), ``/{prefix}/reset``, ``/{prefix}/step``, ``/{prefix}/state``,
``/{prefix}/health``, ``/{prefix}/schema``; ``/`` lists the prefixes. Needs
``pip install colbench-gym[serve]``.
"""

from __future__ import annotations

import argparse
import json
import sys

from colbench_gym.tasks.kinds import KINDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 for other machines)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--envs", nargs="+", default=list(KINDS), choices=list(KINDS),
                        help="which environments to serve (each under /<name>)")
    parser.add_argument("--max-sessions", type=int, default=16,
                        help="concurrent WebSocket sessions (envs) per environment; a trainer needs one per rollout")
    for name in KINDS:
        parser.add_argument(f"--{name}-tasks", default=None, help=f"{name} task source (default: embedded:test)")
    parser.add_argument("--simulator", default="offline", help="offline | openai | transformers")
    parser.add_argument("--simulator-kwargs", default=None, help="JSON options of the simulator")
    parser.add_argument("--reward-mode", default="success", choices=["success", "fraction"], help="backend reward")
    parser.add_argument("--scorer", default="auto", help="frontend scorer: auto | clip | fallback")
    parser.add_argument("--max-turns", type=int, default=10, help="agent turns per episode (paper: 10)")


def make_env_options(args: argparse.Namespace) -> dict[str, dict]:
    """``gym.make`` options per served env from the command line."""
    common: dict = {"simulator": args.simulator, "max_turns": args.max_turns}
    if args.simulator_kwargs:
        try:
            common["simulator_kwargs"] = json.loads(args.simulator_kwargs)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--simulator-kwargs must be a JSON object ({exc})") from None
    # the reward settings go only to the kinds that take them (--reward-mode: backend, --scorer: frontend)
    return {name: {**common, **{opt: getattr(args, opt) for opt in KINDS[name].reward_options},
                   "tasks": getattr(args, f"{name}_tasks")} for name in args.envs}


def check_task_sources(args: argparse.Namespace) -> None:
    """Resolve every served env's task source before anything is served: a source that does not
    exist (``--backend-tasks embeded:test``) is refused here, in one line naming the flag and the
    sources there are, instead of a server that starts and answers HTTP 500 at the first reset
    (the envs are made per session, after start-up)."""
    from colbench_gym.tasks.sources import resolve_task_source

    for name in args.envs:
        spec = getattr(args, f"{name}_tasks")
        try:
            resolve_task_source(spec, name)
        except (ValueError, OSError) as exc:
            raise SystemExit(f"--{name}-tasks {spec}: {' '.join(str(exc).split())}; `colbench tasks sources` "
                             "lists the task sources") from None


def run(args: argparse.Namespace) -> int:
    check_task_sources(args)
    try:
        import uvicorn

        from colbench_gym.online.server import create_colbench_app
    except ImportError as exc:
        raise ImportError(f"colbench serve needs OpenEnv ({exc.name} is missing): "
                          "pip install 'colbench-gym[serve]'") from None
    app = create_colbench_app(make_env_options(args), max_concurrent_envs=args.max_sessions)
    base = f"http://{args.host}:{args.port}"
    for name in args.envs:
        print(f"[colbench serve] {name}: {base}/{name} (WebSocket {base.replace('http', 'ws', 1)}/{name}/ws)",
              file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0

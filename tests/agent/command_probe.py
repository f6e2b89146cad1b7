"""A command for the fork-server tests (tests/agent/test_forkserver.py, tests/learning/test_bench_protocol.py):
``python -m tests.agent.command_probe OUT CODE [--child PIDFILE] [--deaf] [--sleep]`` prints, as one
JSON line, what a started process can see of itself (pid, process group, session, working directory,
argv, ``__name__``, an environment variable, whether torch was imported before it ran and torch's
thread count), writes OUT from an ``atexit`` handler, and exits with CODE; ``--child`` starts a
sleeping child and writes its pid, ``--deaf`` ignores SIGTERM, ``--sleep`` then waits for a signal."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    out, code = argv[0], int(argv[1])
    preloaded = "torch" in sys.modules
    atexit.register(lambda: open(out, "w", encoding="utf-8").write("atexit ran"))
    if "--deaf" in argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    torch = sys.modules.get("torch")
    print(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0), "cwd": os.getcwd(),
                      "argv": sys.argv, "name": __name__, "value": os.environ.get("PROBE_VALUE"),
                      "torch_preloaded": preloaded, "threads": torch.get_num_threads() if torch else None}), flush=True)
    print("a line to stderr", file=sys.stderr, flush=True)
    if "--child" in argv:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(argv[argv.index("--child") + 1], "w", encoding="utf-8") as fh:
            fh.write(str(child.pid))
    if "--sleep" in argv:
        time.sleep(300)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

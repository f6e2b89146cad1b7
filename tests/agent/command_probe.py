"""A command for the fork-server tests (tests/agent/test_forkserver.py, tests/learning/test_bench_protocol.py):
``python -m tests.agent.command_probe OUT CODE [--child PIDFILE] [--deaf] [--thread] [--interrupt] [--sleep]``
prints, as one JSON line, what a started process can see of itself (pid, process group, session,
working directory, argv, ``__name__``, an environment variable, whether torch was imported before
it ran, torch's thread count and seed, a numpy draw), appends "atexit ran" to OUT from an ``atexit``
handler, and exits with CODE; ``--child`` starts a sleeping child and writes its pid, ``--deaf``
ignores SIGTERM, ``--thread`` leaves a thread that appends "thread finished" to OUT a moment later,
``--interrupt`` ends by an uncaught KeyboardInterrupt, ``--sleep`` waits for a signal."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    out, code = argv[0], int(argv[1])
    preloaded = "torch" in sys.modules
    atexit.register(lambda: open(out, "a", encoding="utf-8").write("atexit ran\n"))
    if "--deaf" in argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    torch, numpy = sys.modules.get("torch"), sys.modules.get("numpy")
    print(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0), "cwd": os.getcwd(),
                      "argv": sys.argv, "name": __name__, "value": os.environ.get("PROBE_VALUE"),
                      "torch_preloaded": preloaded, "threads": torch.get_num_threads() if torch else None,
                      "torch_seed": torch.initial_seed() if torch else None,
                      "numpy_draw": float(numpy.random.rand()) if numpy else None}), flush=True)
    print("a line to stderr", file=sys.stderr, flush=True)
    if "--child" in argv:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(argv[argv.index("--child") + 1], "w", encoding="utf-8") as fh:
            fh.write(str(child.pid))
    if "--thread" in argv:
        threading.Thread(target=lambda: (time.sleep(0.3), open(out, "a", encoding="utf-8").write("thread finished\n")),
                         daemon=False).start()
    if "--interrupt" in argv:
        raise KeyboardInterrupt
    if "--sleep" in argv:
        time.sleep(300)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

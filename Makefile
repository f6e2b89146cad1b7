# The two commands of the README: `make demo` and `make test`. Both set everything up first.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup setup-base demo test test-fast test-long bench bench-learning llama-cpp lint clean soak soak-tasks gpu-smoke grpo-example-check

setup:
	@bash scripts/setup.sh full

setup-base:
	@bash scripts/setup.sh base

demo: setup
	@$(PY) -m examples.demo

# The suite runs in PYTEST_WORKERS processes (pytest-xdist; 2: the CI machine's cores; 0: one process).
# Its slow tests wait on subprocesses, browsers and servers, so two workers overlap them; work stealing
# keeps both busy to the end. More workers need ~4 GB of memory each (tests load the 0.5B model); three were slower.
PYTEST_WORKERS ?= 2
XDIST = -n $(PYTEST_WORKERS) --dist worksteal
# One torch/OpenMP thread per process while workers share the cores (an OMP_NUM_THREADS of your own wins): torch's
# default, a thread per core, put four threads on two cores. One process (PYTEST_WORKERS=0) keeps the default.
# The measurements behind both choices: CONTRIBUTING.md, Tests.
TEST_THREADS = $(if $(filter 0,$(PYTEST_WORKERS)),,OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1})

test: setup
	@$(TEST_THREADS) $(PY) -m pytest -q -ra -m "not long" $(XDIST) --durations=25

test-fast: setup
	@$(TEST_THREADS) $(PY) -m pytest -q -ra -m "not slow and not long" $(XDIST)

# training runs on the real model kept out of `make test` (the GRPO example's first step on the 0.5B model, ~3 min
# and ~16 GB resident: tests/grpo/test_trl_example_gradient.py, the same run as `make grpo-example-check` with its asserts)
test-long: setup
	@$(PY) -m pytest -q -ra -m long

bench: setup
	@for b in benchmarks/bench_*.py; do [ "$$b" = benchmarks/bench_learning.py ] && continue; echo "== $$b"; $(PY) $$b || exit 1; done

# The learning benchmark protocol (~8 h on 2 cores in sittings, resumable; docs/training.md): zero-shot, RFT, MT-DPO, SWEET-RL and
# critic-guided best-of-N, selected on collab:val, 3 seeds, tested once. E.g. ARGS="--profile quick".
# Its step-pair candidates come from a llama.cpp server on the default model's GGUF (llama-cpp-python, next target).
bench-learning: setup llama-cpp
	@$(PY) benchmarks/bench_learning.py $(ARGS)

# llama-cpp-python, for the llama.cpp candidate server (scripts/llama_server.py): not a dependency of the project,
# installed once on demand (no prebuilt wheel: pip compiles llama.cpp, 20-35 min on 2 cores; pip's cache keeps the wheel)
llama-cpp: setup
	@if $(PY) -c "import llama_cpp" 2>/dev/null; then echo "llama-cpp-python: installed"; else \
	  echo "llama-cpp-python: installing llama-cpp-python==0.3.36 once (compiles llama.cpp: 20-35 min on 2 cores)"; \
	  $(VENV)/bin/pip install -q "llama-cpp-python==0.3.36"; fi

# the GRPO example on the real 0.5B model on a CPU: does its first step call tools and get a gradient? (issue 39;
# ~4 min on 2 idle cores, ~16 GB; make test runs it too: tests/grpo/test_trl_example_gradient.py)
grpo-example-check: setup
	@$(PY) benchmarks/check_grpo_example.py

# fault-injection soak of rollouts (>= 500 episodes, concurrency 32, SIGKILLs + resumes; see docs/agent.md)
soak: setup
	@$(PY) benchmarks/soak_rollouts.py

# the generator's full audit over 1000 more tasks per split (rare parameter combinations; `make test` audits 250 more)
soak-tasks: setup
	@COLBENCH_TASK_SOAK=1000 $(PY) -m pytest -q -p no:cacheprovider tests/tasks/test_task_generator.py -k more_tasks_per_split

# every training and evaluation command on the GPU with a tiny random model, each checked to have used it
# (scripts/gpu_smoke.sh; without a GPU it says so and exits 0; the CPU counterpart runs in the tests)
gpu-smoke: setup
	@bash scripts/gpu_smoke.sh

lint: setup
	@$(VENV)/bin/ruff check colbench_gym sweet_agent tests examples benchmarks
	@$(VENV)/bin/lint-imports --no-cache
	@$(PY) -m pytest -q -p no:cacheprovider tests/test_kind_branches.py  # no new branch on a kind's name

clean:
	rm -rf $(VENV) build *.egg-info

"""The offline backend simulator on every shipped task and on generated ones.

A battery of generic questions an agent asks must get replies that are short, honest about what
the reference holds, and free of the reference's code -- on tasks written by other people.
"""

from __future__ import annotations

import re

import pytest

from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.tasks.embedded import load_embedded
from colbench_gym.tasks.generator import generate_backend_tasks
from colbench_gym.tasks.records import BackendTask

GENERIC = [
    "What should the function return?", "What are the parameters and their types?",
    "Are there any special cases or edge cases?", "What happens if the input is empty?",
    "What are the exact thresholds or rates?", "How should ties be handled?",
    "Can you give me an example?", "Hello!", "How is the result calculated?",
    "What values can each parameter take?", "Do you want it in Python?",
    "1) What is the output format? 2) Anything special about negative numbers?",
    "```python\ndef placeholder(x):\n    return x\n```",
]


def all_tasks() -> list[BackendTask]:
    tasks = load_embedded("backend", "test") + load_embedded("backend", "train")
    tasks += generate_backend_tasks(40, "train") + generate_backend_tasks(20, "test")
    return tasks


TASKS = all_tasks()


def ask(sim: OfflineBackendSimulator, task: BackendTask, question: str) -> str:
    return sim.respond(task, [{"role": "user", "content": task.problem_description},
                              {"role": "assistant", "content": question}])


def sentences(text: str) -> int:
    bare = re.sub(r"'[^']*'", "Q", text)
    return len([s for s in re.split(r"(?<=[.!?])\s+", bare.strip()) if s])


def test_there_are_tasks_to_check():
    assert len(TASKS) >= 60


@pytest.mark.parametrize("index", range(len(TASKS)), ids=[t.task_id[:8] for t in TASKS])
def test_generic_questions_on_every_task(index):
    task = TASKS[index]
    sim = OfflineBackendSimulator(seed=index)
    sim.reset(task, seed=index)
    sheet = sim.facts_for(task)
    assert sheet.parse_error is None and sheet.func_name, sheet.parse_error
    lines = [ln.strip() for ln in task.ground_truth.splitlines() if len(ln.strip()) >= 12]
    calls = list(task.test_cases.values())
    replies = {}
    for question in GENERIC:
        reply = ask(sim, task, question)
        replies[question] = reply
        assert reply.strip() and len(reply) <= 400, reply
        assert sentences(reply) <= 2, reply
        assert "def " not in reply and "return " not in reply, reply
        assert not any(line in reply for line in lines), reply
        assert not any(call in reply for call in calls), reply
    # sensible: the output question is always answerable, the signature always names the function
    assert "don't know" not in replies["What should the function return?"]
    params = ask(sim, task, "What are the function's name and its parameters?")
    assert sheet.func_name in params
    source = task.ground_truth
    rounding = ask(sim, task, "Should I round the result?")
    if re.search(r"\bround\(|:\.\d+f", source):
        assert re.search(r"decimal|whole number", rounding), rounding
    elif "//" in source:
        assert re.search(r"rounded (down|up)", rounding), rounding
    elif not re.search(r"\bint\(|math\.(floor|ceil)", source):
        assert rounding.startswith("No"), rounding
    errors = ask(sim, task, "Should it raise an error on invalid input?")
    raised = re.findall(r"raise (\w+)", source)
    if raised:
        assert any(name in errors for name in raised), errors
    else:
        assert errors.startswith("No"), errors
    tables = re.findall(r"\w+\s*=\s*\{\s*['\"](\w[\w ]*)['\"]\s*:\s*([\d.]+)", source)
    if tables:  # a price/rate table: asking for the values gives at least one real pair
        values = ask(sim, task, "What are the exact values for each option?")
        assert any(f"'{key}'" in values and num in values for key, num in tables), values



def _stdlib_functions(modules: tuple[str, ...]) -> list[tuple[str, str]]:
    import ast
    import importlib
    import inspect
    import textwrap

    out = []
    for name in modules:
        src = inspect.getsource(importlib.import_module(name))
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                seg = ast.get_source_segment(src, node)
                if seg:
                    out.append((node.name, textwrap.dedent(seg)))
    return out


def test_survives_real_world_code():
    """Any Python function can be a reference (the official set is LLM-written): nested
    functions, generators, try/except, decorators, star-args. Nothing may crash or overflow."""
    sim = OfflineBackendSimulator()
    functions = _stdlib_functions(("textwrap", "statistics", "fractions", "calendar", "shlex"))
    assert len(functions) > 100
    for name, source in functions:
        task = {"problem_description": f"Write {name}.", "ground_truth": source, "test_cases": {"t": f"{name}()"}}
        for question in ("What should the function return?", "Any edge cases?", "Should it raise errors?",
                         "```python\ndef f(x):\n    return 1\n```", "Hello"):
            reply = ask(sim, BackendTask.from_record(task), question)
            assert reply.strip() and len(reply) <= 400, (name, reply)

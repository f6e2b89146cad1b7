"""The Inspect AI tasks, run by Inspect's real eval loop with its mock model provider (no network)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import list_eval_logs, read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from colbench_gym.integrations.inspect_tasks import colbench_backend, colbench_frontend  # noqa: E402
from colbench_gym.protocol import ANSWER_MARKER  # noqa: E402
from colbench_gym.tasks.sources import resolve_task_source  # noqa: E402
from tests.local_openai_server import LocalOpenAIServer  # noqa: E402

TASKS = resolve_task_source("embedded:test", "backend")
QUESTION = "What should the function return for an empty input?"


def _output(text: str, model: str = "mockllm/model") -> ModelOutput:
    """A scripted generation. Usage is given, as a real provider reports it: without it the mock
    provider counts tokens with tiktoken, whose encoding is downloaded on first use (no network here)."""
    out = ModelOutput.from_content(model=model, content=text)
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


@contextlib.contextmanager
def _running_loop():
    """An event loop running in a thread, as the eval's loop runs while the env calls the role."""
    import asyncio
    import threading

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def _agent(answers: dict[str, str], question: str = QUESTION):
    """A scripted agent: asks one question, then answers with the text given for the task."""

    def outputs(messages, tools, tool_choice, config) -> ModelOutput:
        opening = next(m.text for m in messages if m.role == "user")
        turns = sum(m.role == "assistant" for m in messages)
        text = question if turns == 0 else f"{ANSWER_MARKER}\n```python\n{answers[opening]}\n```"
        return _output(text)

    return get_model("mockllm/model", custom_outputs=outputs, memoize=False)


def _run(task, tmp_path: Path, **kwargs):
    [log] = inspect_eval(task, log_dir=str(tmp_path), display="none", **kwargs)
    assert log.status == "success", log.error
    return log


def test_correct_answer_scores_one_and_a_wrong_one_less(tmp_path: Path) -> None:
    right, wrong = TASKS[0], TASKS[1]
    agent = _agent({right.problem_description: right.ground_truth,
                    wrong.problem_description: "def nothing(*args, **kwargs):\n    return None"})
    log = _run(colbench_backend(num_tasks=2), tmp_path, model=agent)
    by_id = {s.id: s for s in log.samples}
    good, bad = by_id[0].scores["colbench_grader"], by_id[1].scores["colbench_grader"]
    assert good.value == {"success": 1.0, "tests": 1.0}
    assert bad.value["success"] == 0.0 and bad.value["tests"] < 1.0
    assert good.metadata["ended_by"] == "answer" and good.metadata["turns"] == 2
    # The log file exists and holds the dialogue: instructions, request, question, reply, answer.
    [info] = list_eval_logs(str(tmp_path))
    saved = read_eval_log(info.name)
    dialogue = [(m.role, m.text) for m in {s.id: s for s in saved.samples}[0].messages]
    assert [r for r, _ in dialogue] == ["system", "user", "assistant", "user", "assistant"]
    assert ANSWER_MARKER in dialogue[0][1] and dialogue[1][1] == right.problem_description
    assert dialogue[2][1] == QUESTION and dialogue[3][1].strip() and dialogue[4][1].startswith(ANSWER_MARKER)
    assert right.ground_truth not in dialogue[3][1]  # the person never hands over the code
    metrics = {s.name: s.metrics["mean"].value for s in saved.results.scores}
    assert metrics["success"] == pytest.approx(0.5) and 0.5 <= metrics["tests"] < 1.0


def test_the_user_role_model_plays_the_person(tmp_path: Path) -> None:
    task0 = TASKS[0]
    seen: list[str] = []

    def person(messages, tools, tool_choice, config) -> ModelOutput:
        seen.append(messages[0].text)  # the simulator prompt: request + hidden reference
        assert messages[-1].role == "user" and messages[-1].text == QUESTION  # roles swapped for the person
        return _output("It should give back zero.", "mockllm/person")

    agent = _agent({task0.problem_description: "def f():\n    return 0"})
    user = get_model("mockllm/person", custom_outputs=person, memoize=False)
    log = _run(colbench_backend(num_tasks=1), tmp_path, model=agent, model_roles={"user": user})
    [sample] = log.samples
    assert [m.text for m in sample.messages if m.role == "user"][1] == "It should give back zero."
    assert len(seen) == 1 and task0.ground_truth.strip() in seen[0]
    # The person's generation is in the sample's transcript, under the user model.
    assert any(getattr(e, "event", "") == "model" and e.model == "mockllm/person" for e in sample.events)


def test_ten_turns_without_the_marker_end_with_the_last_turn_as_answer(tmp_path: Path) -> None:
    never = get_model("mockllm/model", custom_outputs=lambda *a: _output("Could you tell me more?"), memoize=False)
    log = _run(colbench_backend(num_tasks=1), tmp_path, model=never)  # never says the marker
    [sample] = log.samples
    score = sample.scores["colbench_grader"]
    assert score.metadata["ended_by"] == "turn_limit" and score.metadata["turns"] == 10
    assert sum(m.role == "assistant" for m in sample.messages) == 10 and score.value["success"] == 0.0


def test_inspect_cli_runs_the_registered_task_against_any_provider(tmp_path: Path) -> None:
    """`inspect eval colbench_gym/colbench_backend` as a user types it: the task found through the
    `inspect_ai` entry point, the agent and the person two models of Inspect's OpenAI-compatible
    provider, served by a real local HTTP server."""
    task0 = TASKS[0]

    def reply(body: dict) -> str:
        if body["model"] == "person":
            return "Zero, please."
        asked = any(m["role"] == "assistant" for m in body["messages"])
        return f"{ANSWER_MARKER}\n```python\n{task0.ground_truth}\n```" if asked else QUESTION

    inspect_cli = Path(sys.executable).with_name("inspect")
    with LocalOpenAIServer(reply) as server:
        out = subprocess.run(
            [str(inspect_cli), "eval", "colbench_gym/colbench_backend", "--model", "openai-api/local/agent",
             "--model-role", "user=openai-api/local/person", "--limit", "1", "--log-dir", str(tmp_path),
             "--display", "none"], capture_output=True, text=True, timeout=600,
            env={**os.environ, "LOCAL_API_KEY": "none", "LOCAL_BASE_URL": server.base_url, "NO_COLOR": "1"})
        models = [r["body"]["model"] for r in server.requests]
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert models == ["agent", "person", "agent"]
    [info] = list_eval_logs(str(tmp_path))
    log = read_eval_log(info.name)
    assert log.eval.task == "colbench_gym/colbench_backend" and log.status == "success"
    assert log.samples[0].scores["colbench_grader"].value == {"success": 1.0, "tests": 1.0}
    assert [m.text for m in log.samples[0].messages if m.role == "user"][1] == "Zero, please."


def test_frontend_task_scores_the_reference_page_highest(tmp_path: Path, browser_ready) -> None:
    """Frontend: a draft first (the person, a user-role model, sees both screenshots), then the page."""
    pages = resolve_task_source("embedded:test", "frontend")
    right = pages[0]
    draft = "<html><body><h1 class='text-3xl'>Draft</h1></body></html>"
    images_seen: list[int] = []

    def agent(messages, tools, tool_choice, config) -> ModelOutput:
        opening = next(m.text for m in messages if m.role == "user")
        if not any(m.role == "assistant" for m in messages):
            return _output(f"A first look.\nOUTPUT: Is this close? {draft}")
        page = right.ground_truth if opening == right.problem_description else "<html><body><p>hi</p></body></html>"
        return _output(f"Here it is.\nOUTPUT: {ANSWER_MARKER}\n{page}")

    def person(messages, tools, tool_choice, config) -> ModelOutput:
        images_seen.append(sum(getattr(c, "type", "") == "image" for c in messages[-1].content))
        return _output("Make the heading green.", "mockllm/person")

    log = _run(colbench_frontend(num_tasks=2, scorer="fallback"), tmp_path,
               model=get_model("mockllm/model", custom_outputs=agent, memoize=False),
               model_roles={"user": get_model("mockllm/person", custom_outputs=person, memoize=False)})
    by_id = {s.id: s.scores["colbench_similarity"] for s in log.samples}
    assert by_id[0].value == pytest.approx(1.0, abs=1e-3) and by_id[1].value < by_id[0].value - 0.01
    assert by_id[0].metadata["scorer"].endswith("(not CLIP)") and by_id[0].metadata["turns"] == 2
    assert images_seen == [2, 2]  # the draft's screenshot and the page the person wants


def test_an_answer_the_infrastructure_cannot_score_is_a_sample_error_not_a_score(tmp_path: Path) -> None:
    """A task whose reference cannot run (no test has a usable result: ``task_error``) scores the
    right answer and a wrong one alike; Inspect gets a sample error naming the reason, never a
    0 or 1 that would rank a model on what the grader could not measure."""
    broken = {"problem_description": "Write f(x) that returns x.",
              "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
              "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    source = tmp_path / "broken.jsonl"
    source.write_text(json.dumps(broken) + "\n")
    agent = _agent({broken["problem_description"]: "def f(x):\n    return x"})
    [log] = inspect_eval(colbench_backend(tasks=str(source)), log_dir=str(tmp_path / "logs"), display="none",
                         model=agent, fail_on_error=False)
    [sample] = log.samples
    assert sample.error is not None and "task_error" in sample.error.message
    assert not sample.scores  # no number for it


def test_any_string_is_a_turn_and_the_sample_is_scored(tmp_path: Path) -> None:
    """Issue 37: an agent turn holding a lone surrogate (a provider's \\ud800 escape decodes to one)
    ended the whole eval in a serialization error of Inspect's log; now the person answers it and
    the sample is scored as the local episode is."""
    right = TASKS[0]
    for question in ("What is the rate \ud800?", "nul\x00 \x1b[31m control\x7f?"):
        agent = _agent({right.problem_description: right.ground_truth}, question=question)
        log = _run(colbench_backend(num_tasks=1), tmp_path / str(len(question)), model=agent)
        [sample] = log.samples
        assert sample.error is None and sample.scores["colbench_grader"].value == {"success": 1.0, "tests": 1.0}
        assert sample.scores["colbench_grader"].metadata["ended_by"] == "answer"


def test_a_reasoning_model_s_turns_are_scored_not_sample_errors(tmp_path: Path) -> None:
    """A reasoning model's output holds a reasoning part before its text (Claude with thinking,
    o-series, Qwen3): making the turn encodable assigned the reasoning part's read-only ``text``,
    so every such sample errored (the eval failed; with ``retry_on_error`` the sample was drawn
    again until an output had no reasoning: selection over the agent's outputs). Now the answer
    is scored, right or wrong, and a lone surrogate in the reasoning is made encodable."""
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ContentReasoning, ContentText

    right = TASKS[0]

    def agent(code: str, thought: str):
        def outputs(messages, tools, tool_choice, config) -> ModelOutput:
            text = f"{ANSWER_MARKER}\n```python\n{code}\n```"
            out = ModelOutput(model="mockllm/model", choices=[ChatCompletionChoice(
                message=ChatMessageAssistant(content=[ContentReasoning(reasoning=thought), ContentText(text=text)],
                                             model="mockllm/model"), stop_reason="stop")])
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return out
        return get_model("mockllm/model", custom_outputs=outputs, memoize=False)

    for code, thought, want in ((right.ground_truth, "think \ud800", 1.0), ("def nothing():\n    pass", "hmm", 0.0)):
        log = _run(colbench_backend(num_tasks=1), tmp_path / str(want), model=agent(code, thought))
        [sample] = log.samples
        assert log.status == "success" and sample.error is None
        assert sample.scores["colbench_grader"].value["tests"] == want
        assert sample.scores["colbench_grader"].metadata["ended_by"] == "answer"


def test_the_user_role_plays_the_frontend_person_with_the_kinds_own_prompt() -> None:
    """The role's model gets the kind's chat-model person's request (both screenshots as images,
    the leak guard's retry note): the integration holds no prompt of its own per kind."""
    from PIL import Image

    from colbench_gym.integrations.inspect_tasks import InspectRoleSimulator
    from colbench_gym.tasks.records import FrontendTask

    seen: list = []

    def person(messages, tools, tool_choice, config) -> ModelOutput:
        seen.append(messages)
        return _output("Make the header blue.", "mockllm/person")

    with _running_loop() as loop:
        role = InspectRoleSimulator("frontend", get_model("mockllm/person", custom_outputs=person, memoize=False), loop)
        task = FrontendTask("A page about tea.", "<html><body><h1>Tea</h1></body></html>")
        dialogue = [{"role": "user", "content": task.problem_description},
                    {"role": "assistant", "content": "Here is my draft."}]
        images = {"agent_image": Image.new("RGB", (32, 32), "red"), "reference_image": Image.new("RGB", (32, 32), "blue")}
        assert role.respond(task, dialogue, **images) == "Make the header blue."
        assert role.respond(task, dialogue, leak_retry=1, **images) == "Make the header blue."
    first, retried = seen
    assert "A page about tea." in first[0].text  # the frontend person's system prompt
    images_sent = [part for part in first[-1].content if getattr(part, "type", "") == "image"]
    assert len(images_sent) == 2  # the agent's page and the page the person wants
    # the leak guard's retry note, in the opening system message (the only place every template takes one)
    assert len(retried) == len(first) and "was not sent" in retried[0].text
    assert [m.role for m in retried].count("system") == 1


def test_the_user_role_reads_less_when_its_model_refuses_a_long_dialogue() -> None:
    """Inspect's providers answer an over-long prompt with an output whose stop reason is
    ``model_length`` (its text the provider's error): the person asks again with less of the
    dialogue, never passing that text on as a reply, never failing for what the agent wrote."""
    from colbench_gym.integrations.inspect_tasks import InspectRoleSimulator
    from colbench_gym.tasks.embedded import load_embedded

    sizes: list[int] = []

    def person(messages, tools, tool_choice, config) -> ModelOutput:
        size = sum(len(m.text.encode()) for m in messages)
        sizes.append(size)
        if size > 12_000:
            out = _output("This model's maximum context length is 4096 tokens.", "mockllm/person")
            out.choices[0].stop_reason = "model_length"
            return out
        return _output("I don't know.", "mockllm/person")

    with _running_loop() as loop:
        role = InspectRoleSimulator("backend", get_model("mockllm/person", custom_outputs=person, memoize=False), loop)
        task = load_embedded("backend", "test")[0]
        pad = "".join(chr(0x20000 + i) for i in range(7000))
        dialogue = [{"role": "user", "content": task.problem_description},
                    {"role": "assistant", "content": "What should it return? " + pad},
                    {"role": "user", "content": "I don't know."},
                    {"role": "assistant", "content": "And now? " + pad}]
        assert role.respond(task, dialogue) == "I don't know."
    assert sizes[0] > 12_000 and sizes[-1] <= 12_000 and len(sizes) >= 2


def test_a_kind_without_a_chat_model_person_cannot_be_the_user_role(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from colbench_gym.integrations import inspect_tasks
    from colbench_gym.tasks import kinds

    third = dataclasses.replace(kinds.BACKEND, name="silent", simulators={})
    monkeypatch.setattr(inspect_tasks, "env_kind", lambda name: third)
    monkeypatch.setattr(inspect_tasks, "check_kind", lambda kind: kind)
    with pytest.raises(ValueError, match="silent kind has no chat-model person"):
        inspect_tasks.InspectRoleSimulator("silent", get_model("mockllm/model"), None)

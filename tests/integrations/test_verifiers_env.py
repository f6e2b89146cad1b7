"""The verifiers environment, run by verifiers' real rollout loop against a real local
OpenAI-compatible HTTP server (the agent's model), the offline person and the sandboxed grader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers")

from openai import AsyncOpenAI  # noqa: E402

from colbench_gym.integrations.verifiers_env import load_environment  # noqa: E402
from colbench_gym.protocol import ANSWER_MARKER  # noqa: E402
from colbench_gym.tasks.sources import resolve_task_source  # noqa: E402
from tests.local_openai_server import END_ID, LocalOpenAIServer  # noqa: E402

TASKS = resolve_task_source("embedded:test", "backend")
QUESTION = "What should the function return for an empty input?"


def _scripted_agent(body: dict) -> str:
    """Asks one question, then answers task 0 with its reference and any other task wrongly."""
    messages = body["messages"]
    if not any(m["role"] == "assistant" for m in messages):
        return QUESTION
    opening = next(m["content"] for m in messages if m["role"] == "user")
    code = TASKS[0].ground_truth if opening == TASKS[0].problem_description else "def nothing():\n    return None"
    return f"{ANSWER_MARKER}\n```python\n{code}\n```"


def test_rollouts_reach_the_person_and_the_grader() -> None:
    env = load_environment(num_tasks=2)
    with LocalOpenAIServer(_scripted_agent) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
        out = env.evaluate_sync(client, model="stub", num_examples=2, rollouts_per_example=1, max_concurrent=2)
        requests = [r["body"] for r in server.requests]
    by_task = {o["info"]["task_index"]: o for o in out["outputs"]}
    assert {i: o["reward"] for i, o in by_task.items()} == {0: 1.0, 1: 0.0}
    assert by_task[0]["metrics"]["tests"] == 1.0 and by_task[1]["metrics"]["success"] == 0.0
    assert by_task[0]["stop_condition"] == "has_final_env_response"
    # The completion holds the dialogue: question, the person's reply, the answer.
    assert [m["role"] for m in by_task[0]["completion"]] == ["assistant", "user", "assistant"]
    assert len(requests) == 4  # two turns per rollout: the question, then the answer
    second = next(b for b in requests if any(m["role"] == "assistant" for m in b["messages"]))
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # instructions, request, question, person's reply
    assert ANSWER_MARKER in second["messages"][0]["content"] and second["messages"][3]["content"].strip()
    assert all(TASKS[0].ground_truth not in m["content"] for m in second["messages"])  # the reference stays hidden


def test_the_last_turn_is_the_answer() -> None:
    env = load_environment(num_tasks=1, max_turns=3, reward_mode="fraction")
    with LocalOpenAIServer(lambda body: "Tell me more?") as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
        assert len(server.requests) == 3
    assert [o["reward"] for o in out["outputs"]] == [0.0]


def test_a_group_of_rollouts_starts_from_the_same_task_and_person() -> None:
    env = load_environment(num_tasks=1)
    with LocalOpenAIServer(lambda body: QUESTION if len(body["messages"]) < 4 else f"{ANSWER_MARKER}\npass") as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
        env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=3)
        replies = [b["messages"][3]["content"] for b in (r["body"] for r in server.requests) if len(b["messages"]) == 4]
    assert len(replies) == 3 and len(set(replies)) == 1  # same task, same seed: the same reply


def test_vf_eval_runs_the_environment_by_name(tmp_path: Path) -> None:
    """`vf-eval colbench-gym` as a user types it (verifiers imports `colbench_gym.load_environment`)."""
    vf_eval = Path(sys.executable).with_name("vf-eval")
    with LocalOpenAIServer(_scripted_agent) as server:
        out = subprocess.run(
            [str(vf_eval), "colbench-gym", "-a", json.dumps({"num_tasks": 1}), "-m", "stub", "-b", server.base_url,
             "-k", "STUB_API_KEY", "-n", "1", "-r", "1", "-s"], capture_output=True, text=True, timeout=600,
            cwd=tmp_path, env={**os.environ, "STUB_API_KEY": "none", "NO_COLOR": "1"})
        assert len(server.requests) == 2
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    [results] = list(tmp_path.rglob("results.jsonl"))
    [row] = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["reward"] == 1.0


def test_an_answer_the_infrastructure_cannot_score_is_a_rollout_error(tmp_path: Path) -> None:
    """A task no test can measure (its reference cannot run: ``task_error``): the rollout carries
    verifiers' InfraError (what ``max_retries`` retries and eval lists under errors), so a trainer
    that filters errored rollouts never learns from the 0.0 the rubric is forced to return."""
    broken = {"problem_description": "Write f(x) that returns x.",
              "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
              "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    source = tmp_path / "broken.jsonl"
    source.write_text(json.dumps(broken) + "\n")
    env = load_environment(tasks=str(source))
    with LocalOpenAIServer(lambda body: f"{ANSWER_MARKER}\n```python\ndef f(x):\n    return x\n```") as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
    [row] = out["outputs"]
    assert row["error"] is not None and row["error"]["error"] == "InfraError"
    assert "ScoreUnavailable" in row["error"]["error_chain_str"], row["error"]
    assert "task_error" in row["error"]["error_chain_repr"], row["error"]


def test_a_person_whose_endpoint_fails_ends_the_rollout_with_an_infra_error() -> None:
    """The person's endpoint fails for good (HTTP 500 after the client's retries): the rollout ends
    with verifiers' InfraError naming simulator_error — what max_retries retries — instead of
    aborting the whole evaluation, and no grade is taken of a dialogue that never finished."""
    with LocalOpenAIServer(lambda body: "never served", fail_first=10_000) as person, \
            LocalOpenAIServer(lambda body: QUESTION) as agent:
        env = load_environment(num_tasks=1, simulator="openai",
                               simulator_kwargs={"model": "person", "base_url": person.base_url, "api_key": "none",
                                                 "max_retries": 0})
        client = AsyncOpenAI(base_url=agent.base_url, api_key="none")
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
        assert len(agent.requests) == 1 and person.requests  # the question was asked; the person failed
    [row] = out["outputs"]
    assert row["error"] is not None and row["error"]["error"] == "InfraError"
    assert "simulator_error" in row["error"]["error_chain_repr"], row["error"]


def test_an_empty_reply_is_an_empty_turn_scored_not_a_dropped_or_redrawn_rollout() -> None:
    """verifiers raises ``EmptyModelResponseError`` for a reply holding nothing (a small model's
    common failure); the rollout then carried an error, so it was dropped from the outputs, or
    redrawn by ``max_retries`` until a sample said something: a failing agent escaped its 0. Now
    an empty reply is an empty turn, and the rollout is scored once, as the collector scores it."""
    env = load_environment(num_tasks=1, max_turns=3)
    with LocalOpenAIServer(lambda body: "") as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1, max_retries=2)
        requests = len(server.requests)
    [row] = out["outputs"]
    assert row.get("error") is None, row.get("error")
    assert row["reward"] == 0.0 and requests == 3  # three empty turns of one rollout, not redrawn
    assert not env._replies and not env._conversations  # each turn's reply let go once it is taken
    assert [m["role"] for m in row["completion"]] == ["assistant", "user", "assistant", "user", "assistant"]


def test_an_empty_reply_in_interleaved_rollouts_keeps_its_tokens_and_the_dialogue_goes_on() -> None:
    """Under ``interleaved_rollouts`` (PRIME-RL's token-in vLLM) each turn's request is built from
    the previous turn's token ids. The empty turn was a reply made up without them, and the next
    turn failed verifiers' ``assert prev_turn_tokens is not None``: one empty reply stopped the
    whole run. It is now the endpoint's own reply with its text "": its token ids, log-probs and
    finish reason reach training as the endpoint sent them."""
    def agent(body: dict) -> str | tuple[str, str]:
        return ("", "length") if not any(m["role"] == "assistant" for m in body["messages"]) else QUESTION

    env = load_environment(num_tasks=1, max_turns=3)
    env.set_interleaved_rollouts(True)
    with LocalOpenAIServer(agent, vllm_tokens=True) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1,
                                state_columns=["trajectory"])
        turns = [r["path"] for r in server.requests if "/chat/completions" in r["path"]]
    [row] = out["outputs"]
    assert row.get("error") is None, row.get("error")
    assert turns == ["/v1/chat/completions"] + ["/v1/chat/completions/tokens"] * 2  # three turns, token-in after the first
    first = row["trajectory"][0]
    assert first["completion"] == [{"role": "assistant", "content": ""}]
    assert first["tokens"]["completion_ids"] == [END_ID] and first["tokens"]["completion_logprobs"] == [-0.5]
    assert first["response"].choices[0].finish_reason == "length"
    assert row["reward"] == 0.0 and row["stop_condition"] == "has_final_env_response"


def test_an_agent_that_fills_its_context_is_scored_and_a_refusing_endpoint_is_its_failure() -> None:
    """The agent's endpoint refuses a request for its length in words verifiers does not know
    (llama.cpp's): verifiers made it a ``ModelError``, the rollout dropped, a failing agent out of
    the average. When the endpoint takes the dialogue's opening, the refusal is the agent's own
    turns outgrowing its model: the rollout ends as verifiers' overlong prompt, scored 0. An
    endpoint that refuses the opening too stays the endpoint's failure."""
    too_long = "the request exceeds the available context size, try increasing it"
    env = load_environment(num_tasks=1)
    with LocalOpenAIServer(lambda body: QUESTION, refuse=lambda body: too_long if len(body["messages"]) > 2 else None) \
            as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
        sizes = [len(r["body"]["messages"]) for r in server.requests]
    [row] = out["outputs"]
    assert row.get("error") is None, row.get("error")
    assert row["stop_condition"] == "prompt_too_long" and row["reward"] == 0.0
    assert sizes == [2, 4, 2]  # the question, the refused second turn, the probe of the opening
    # the probe is ours, not the agent's: its tokens are not in the rollout's usage (one reply's)
    assert row["token_usage"] == {"input_tokens": 1.0, "output_tokens": 1.0}, row["token_usage"]
    with LocalOpenAIServer(lambda body: QUESTION, refuse=lambda body: too_long) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
    [row] = out["outputs"]
    assert row["error"] is not None and row["error"]["error"] == "ModelError"
    asked = []  # an endpoint that takes the first turn, then refuses everything (the probe too)
    with LocalOpenAIServer(lambda body: QUESTION, refuse=lambda body: too_long if asked.append(1) or len(asked) > 1
                           else None) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
        sizes = [len(r["body"]["messages"]) for r in server.requests]
    [row] = out["outputs"]
    assert sizes == [2, 4, 2]  # the probe was sent, and refused
    assert row["error"] is not None and row["error"]["error"] == "ModelError"


def test_in_interleaved_rollouts_the_opening_probe_sends_the_opening_itself() -> None:
    """Under ``interleaved_rollouts`` verifiers' own call sends the previous turns' token ids
    whatever messages it is given, so a probe through it asked the refused dialogue again and
    the refusal stayed the endpoint's. The probe asks the client for the opening's messages."""
    too_long = "the request exceeds the available context size, try increasing it"
    env = load_environment(num_tasks=1)
    env.set_interleaved_rollouts(True)
    with LocalOpenAIServer(lambda body: QUESTION, vllm_tokens=True,
                           refuse=lambda body: too_long if len(body["messages"]) > 2 else None) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
        asked = [(r["path"], len(r["body"]["messages"]), "tokens" in r["body"]) for r in server.requests
                 if "/chat/completions" in r["path"]]
    [row] = out["outputs"]
    assert row.get("error") is None, row.get("error")
    assert row["stop_condition"] == "prompt_too_long" and row["reward"] == 0.0
    assert asked == [("/v1/chat/completions", 2, False), ("/v1/chat/completions/tokens", 4, True),
                     ("/v1/chat/completions", 2, False)]
    assert row["token_usage"] == {"input_tokens": 1.0, "output_tokens": 1.0}, row["token_usage"]


def test_a_setting_that_cannot_work_fails_at_load_not_as_rollout_errors() -> None:
    """A misspelt simulator is the user's mistake, said once at load — not an InfraError retried
    on every rollout."""
    with pytest.raises(ValueError, match="simulator must be one of"):
        load_environment(num_tasks=1, simulator="opneai")


@pytest.mark.parametrize("question", ["What is the rate \ud800?", "nul\x00 \x1b[31m control\x7f?"])
def test_any_string_is_a_turn_and_the_rollout_is_scored_as_it_is_locally(question) -> None:
    """Issue 37: a turn holding a lone surrogate (the agent endpoint's \\ud800 escape decodes to one)
    raised inside the env and aborted the whole evaluation. Now the person answers it, and the
    rollout ends with the local episode's reward and no error."""
    def agent(body: dict) -> str:
        asked = any(m["role"] == "assistant" for m in body["messages"])
        return f"{ANSWER_MARKER}\n```python\n{TASKS[0].ground_truth}\n```" if asked else question

    env = load_environment(num_tasks=1)
    with LocalOpenAIServer(agent) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
    [row] = out["outputs"]
    assert row.get("error") is None, row.get("error")
    assert row["reward"] == 1.0 and row["metrics"]["success"] == 1.0
    assert [m["role"] for m in row["completion"]] == ["assistant", "user", "assistant"]
    assert row["completion"][1]["content"].strip()  # the person's reply to the question


def test_a_refused_tokenize_call_is_the_endpoint_s_failure_not_the_agent_s_context() -> None:
    """Interleaved rollouts ask vLLM's ``/tokenize`` before the agent's turn is sent; verifiers
    wraps its failure as the turn's ``ModelError``. A 400 there was read as the agent's turn
    refused, the opening probe was taken, and the rollout was scored as the agent's overlong
    prompt (0) for a turn never sent. Only a refusal of the turn's own request counts."""
    env = load_environment(num_tasks=1)
    env.set_interleaved_rollouts(True)
    with LocalOpenAIServer(lambda body: QUESTION, vllm_tokens=True, fail_paths=("/tokenize",), fail_status=400) \
            as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        out = env.evaluate_sync(client, model="stub", num_examples=1, rollouts_per_example=1)
        paths = [r["path"] for r in server.requests]
    [row] = out["outputs"]
    assert "/tokenize" in paths and "/v1/chat/completions/tokens" not in paths  # the second turn was never sent
    assert row["stop_condition"] != "prompt_too_long"
    assert row["error"] is not None and row["error"]["error"] == "ModelError"

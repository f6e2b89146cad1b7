"""ColBench backend programming: write a Python function for a person who knows what they want."""

from __future__ import annotations

from typing import Any, Literal

from colbench_gym.envs.base import ColBenchEnv
from colbench_gym.protocol import MAX_TURNS
from colbench_gym.simulators import HumanSimulator
from colbench_gym.verdicts.backend import REWARD_MODES, score


class ColBenchBackendEnv(ColBenchEnv):
    """
    ## Description
    The backend-programming half of ColBench (Zhou et al., 2025, *SWEET-RL: Training Multi-Turn
    LLM Agents on Collaborative Reasoning Tasks*). A simulated person wants a Python function and
    describes it vaguely; the personal details (thresholds, rates, names, formats, edge cases)
    live only in a hidden reference function that the simulator can read and the agent cannot.
    The agent asks clarifying questions for up to 10 turns and then submits its function, which
    is graded by hidden test calls in a sandbox against the reference's results.

    ## Action Space
    `UnicodeText`: any string, the agent's whole turn. Text before `OUTPUT:` is private thought
    the person never sees. A turn containing `I WANT TO ANSWER:` ends the episode and everything
    after the marker is the answer (Markdown code fences are stripped). Actions longer than
    200,000 characters are cut (``info["action_truncated"]``); non-strings raise `TypeError`.

    ## Observation Space
    `UnicodeText`: the newest message from the person. The first observation is the problem
    description; later ones are replies cut to 400 characters; the final observation is `""`.
    `info["messages"]` holds the whole dialogue as chat messages (`user` = person, `assistant`
    = the agent's raw turns) for chat templates. The reference solution and the tests never
    appear in an observation or in `info`.

    ## Rewards
    0 on every non-final turn. On the final turn: 1.0 if every hidden test passes else 0.0
    (``reward_mode="success"``, the paper's success metric) or the fraction of tests passed
    (``reward_mode="fraction"``, the paper's "% tests passed").

    ## Starting State
    A task from the configured task source: ``options={"task": record}`` (official record
    shape), ``options={"task_index": i}``, or a draw from the environment's seeded generator.

    ## Episode End
    Terminates when the agent writes `I WANT TO ANSWER:` or on its 10th turn (that turn counts
    as the answer, as in the paper). There is no truncation. The final `info` holds
    `tests_passed`, `tests_total`, `success`, `answer`, `ended_by`, `grade_error` and `end_reason`
    (`ended_by`, or `grading_error` / `task_error` when the score is not the answer's own: see
    `colbench_gym.tasks.accounting`). Every `info` holds `simulator_model` and `simulator_usage`
    (the person's prompt/completion tokens this episode).
    Calling `step` after the end raises `EpisodeOverError`.

    ## Arguments
    ```python
    gym.make("ColBench-Backend-v0", tasks="embedded:test", simulator="offline",
             simulator_kwargs=None, reward_mode="success", max_turns=10, grader=None)
    ```
    * `tasks`: `"embedded:test"` (default), `"embedded:train"`, `"generated:train"`,
      `"generated:test"`, a path to an official task JSONL, or a list of records.
    * `simulator`: `"offline"` (no model), `"openai"` (any OpenAI-compatible endpoint, e.g.
      vLLM), `"transformers"` (a local model) or a `HumanSimulator` instance; its options go in
      `simulator_kwargs`.
    * `reward_mode`: `"success"` or `"fraction"`.
    * `grader`: a `colbench_gym.grading.BackendGrader`; by default one sandboxed grader shared
      by the process.

    ``info`` of the final step: ``tests_passed``, ``tests_total``, ``success``, ``grade_error`` and
    ``tests_unpassable`` (tests whose reference gave no usable result: no answer passes them).

    ## Version History
    * v0: Initial version.
    """

    kind = "backend"

    def __init__(
        self,
        tasks: Any = None,
        simulator: str | HumanSimulator | None = "offline",
        simulator_kwargs: dict[str, Any] | None = None,
        reward_mode: Literal["success", "fraction"] = "success",
        max_turns: int = MAX_TURNS,
        grader: Any = None,
        render_mode: str | None = None,
    ) -> None:
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be 'success' or 'fraction', got {reward_mode!r}")
        super().__init__(tasks, simulator, simulator_kwargs, max_turns, render_mode)
        self.reward_mode = reward_mode
        self._grader = grader

    @property
    def grader(self):
        if self._grader is None:
            from colbench_gym.grading import get_default_grader  # noqa: PLC0415 - started on first use

            self._grader = get_default_grader()
        return self._grader

    def _score(self, answer: str) -> tuple[float, dict[str, Any]]:
        verdict = score(answer, self.task, grader=self.grader, reward_mode=self.reward_mode)
        return verdict.reward, verdict.info()

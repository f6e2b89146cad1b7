"""ColBench inside other harnesses: Inspect AI tasks and a verifiers environment.

* :mod:`colbench_gym.integrations.conversation` — the harness-neutral part: one dialogue driven
  turn by turn by an outside agent loop (the simulated person answers through the Gymnasium
  env; the paper's protocol decides when the agent has answered), and the sandboxed grader /
  renderer + scorer that score the final answer.
* :mod:`colbench_gym.integrations.inspect_tasks` — ``colbench_backend()`` / ``colbench_frontend()``
  as Inspect ``@task``s (``pip install colbench-gym[inspect]``; registered through the
  ``inspect_ai`` entry point: ``inspect eval colbench_gym/colbench_backend --model ...``).
* :mod:`colbench_gym.integrations.verifiers_env` — ``load_environment(**kwargs)``, a verifiers
  ``MultiTurnEnv`` (``pip install colbench-gym[verifiers]``; ``vf-eval colbench-gym ...``).

Nothing here is imported by ``import colbench_gym``; each harness is imported only by its module.
"""

"""What every ``sweet-agent train-*`` command shares to run, one module per job.

WHY a package below the trainers: the critic, the actor, the baselines and GRPO are independent
of one another; how a run is configured, a model loaded and saved lives here, below all of them
(what they read, records and pairs, is in :mod:`sweet_agent.training_data`, below this).

- :mod:`~sweet_agent.training.command`: :class:`~sweet_agent.training.command.TrainingCommand`,
  the skeleton of every training command, and its one-line stops (no data, nothing to train).
- :mod:`~sweet_agent.training.arguments`: the data arguments the commands share (``--data``, ...).
- :mod:`~sweet_agent.training.parser`: TRL's ``TrlParser`` over a command's dataclasses, its help.
- :mod:`~sweet_agent.training.presets`: the shipped ``--config`` presets.
- :mod:`~sweet_agent.training.flags`: flags of earlier releases, translated.
- :mod:`~sweet_agent.training.machine`: what a config leaves to the machine (precision, DeepSpeed).
- :mod:`~sweet_agent.training.models`: loading and copying the model a run trains.
- :mod:`~sweet_agent.training.saving`: the final save (LoRA merge), checkpoints to resume from.
- :mod:`~sweet_agent.training.budget`: what a finished run's optimizer saw.
- :mod:`~sweet_agent.training.files`: JSON(L) reading and atomic writing.

Nothing is re-exported here: importing the package loads none of the ML stack.
"""

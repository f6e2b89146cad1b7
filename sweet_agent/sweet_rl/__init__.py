"""SWEET-RL's algorithm, read top to bottom in :mod:`sweet_agent.sweet_rl.algorithm` (the paper's
steps, in the order the data flows); :mod:`sweet_agent.sweet_rl.logprobs` computes the token
log-probabilities it needs. The trainers and the step-pair stage call these functions."""

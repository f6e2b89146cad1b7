"""SWEET-RL agent side."""

"""Offline evaluation commands (``colbench evaluate backend|frontend``); one module each."""

"""The static trajectory viewer (``sweet-agent view``) and training plots (``sweet-agent plot``).

Importing this package loads neither torch nor a browser; the critic and the renderer load only
when a site asks for step-level credit or frontend screenshots.
"""

from sweet_agent.viewer.build import ViewConfig, build_payload, build_site

__all__ = ["ViewConfig", "build_payload", "build_site"]

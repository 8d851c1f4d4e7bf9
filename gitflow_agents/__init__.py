"""gitflow-agents: coding agents on git branches under rules a team can trust."""

__version__ = "0.1.0"

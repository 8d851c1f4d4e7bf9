"""Talking to GitHub: the client (the only module that imports PyGithub) and its pull-request
calls, when to retry, who our token writes as, how to reach GitHub, and the values it hands out."""

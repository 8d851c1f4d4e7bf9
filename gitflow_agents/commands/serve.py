"""``gitflow-agents serve [--port N] [--no-open]``: watch the runs and plans of this repository
in a browser (docs/serve.md).

Listens on 127.0.0.1 only, on a free port unless ``--port``; prints the page's address with
this start's secret token (and opens it in a browser unless ``--no-open``); serves until Ctrl-C.
The server is ``gitflow_agents/serve/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gitflow_agents.base.errors import UsageError


def run(args: argparse.Namespace) -> int:
    import webbrowser

    from gitflow_agents.agent_run.launch import sigterm_as_interrupt
    from gitflow_agents.config import load_flow_config, project_root
    from gitflow_agents.serve.server import make_server, stop_streams

    root = project_root(Path.cwd())
    config = load_flow_config(root)
    try:
        server = make_server(root, config.flow_dir, config.spec_plan, args.port)
    except OSError as exc:
        raise UsageError(f"serve: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
    url = f"http://127.0.0.1:{server.app.port}" + server.app.url("/")
    print(f"gitflow-agents serve: {url}", flush=True)
    print("(the address holds this start's secret token; Ctrl-C stops)", file=sys.stderr)
    if not args.no_open:
        webbrowser.open(url)
    try:
        with sigterm_as_interrupt():
            server.serve_forever(poll_interval=0.2)
    finally:
        stop_streams(server)
    return 0

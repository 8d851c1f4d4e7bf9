"""Milliseconds per request to the GitHub stand-in of the tests, with Nagle's algorithm on its
socket and without.

Usage: python benchmarks/standin_latency.py [--requests N] [--runs N]

The stand-in (``tests/github_standin.py``) answers in two writes, the headers and then the body;
with Nagle's algorithm the body waits for the client's delayed ACK of the headers, 40 ms a
request on Linux. Its handler turns the algorithm off (``disable_nagle_algorithm``); this prints
the median ms per request (GET and POST alternating, one keep-alive session, validated against
the OpenAPI description as in every test) for both settings. Every test that talks to the
stand-in makes tens of requests, so this is most of their wall time. A measurement to watch.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import github_standin


def per_request_ms(nagle_off: bool, count: int) -> float:
    github_standin._Handler.disable_nagle_algorithm = nagle_off
    server = github_standin.GitHubStandIn().start()
    try:
        session = requests.Session()
        headers = {"Authorization": f"token {github_standin.APP_TOKEN}"}
        session.get(f"{server.base_url}/rate_limit", headers=headers)  # connect, load the spec
        started = time.perf_counter()
        for index in range(count):
            if index % 2:
                session.post(
                    f"{server.repo_url}/issues/1/comments", json={"body": "x"}, headers=headers
                )
            else:
                session.get(f"{server.repo_url}/pulls/1", headers=headers)
        return (time.perf_counter() - started) / count * 1000
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{'socket':<22} {'ms/request (median)':>20} {'min':>8} {'max':>8}")
    for label, nagle_off in (("Nagle on (before)", False), ("Nagle off (the tests)", True)):
        times = [per_request_ms(nagle_off, args.requests) for _ in range(args.runs)]
        print(
            f"{label:<22} {statistics.median(times):>20.1f} {min(times):>8.1f} {max(times):>8.1f}"
        )


if __name__ == "__main__":
    main()

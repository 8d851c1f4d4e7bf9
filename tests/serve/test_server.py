"""``gitflow-agents serve`` over HTTP: the token, the refusals, the headers, the live stream,
and hostile text escaped in every page."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import chain
from tests.helpers.serve import Stream, event, request, serving, write_run

RUN = "01900000-0000-7000-8000-000000000001"
# a running agent this test supervises (not a lost one, which the stream would say is lost)
BUILDER = {"state": "running", "agent": "builder", "supervisor_pid": os.getpid()}
HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:x">l</a>'


def _escaped_everywhere(body: str) -> None:
    assert "<script>alert" not in body
    assert "<img src=x" not in body
    assert '<a href="javascript' not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_every_request_without_the_token_is_refused(repo: Path) -> None:
    with serving(repo) as served:
        for target in ("/", "/events", "/static/serve.js", f"/run/{RUN}", "/plan?path=x"):
            assert request(served, target).status == 403, target
            assert (
                request(served, target + ("&" if "?" in target else "?") + "token=wrong").status
                == 403
            )
        assert request(served, "/", headers={"X-Gitflow-Token": served.token}).status == 200
        assert request(served, f"/?token={served.token}").status == 200


def test_a_host_that_is_not_the_server_is_refused(repo: Path) -> None:
    """A DNS name rebound to 127.0.0.1 reads nothing, token or not."""
    with serving(repo) as served:
        answer = request(served, f"/?token={served.token}", headers={"Host": "evil.example:80"})
        assert answer.status == 403
        ok = request(
            served, f"/?token={served.token}", headers={"Host": f"localhost:{served.port}"}
        )
        assert ok.status == 200


def test_every_answer_carries_the_security_headers(repo: Path) -> None:
    with serving(repo) as served:
        for target in ("/", "/static/serve.js"):
            headers = request(served, f"{target}?token={served.token}").headers
            policy = headers["content-security-policy"]
            assert "script-src 'self'" in policy and "unsafe-inline" not in policy
            assert "default-src 'none'" in policy
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["referrer-policy"] == "same-origin"  # the token never leaves
        refused = request(served, "/").headers
        assert refused["x-content-type-options"] == "nosniff"


def test_post_needs_the_token_in_the_form_or_a_header_not_the_query(repo: Path) -> None:
    write_run(repo, RUN, status={"state": "succeeded", "agent": "builder"})
    with serving(repo) as served:
        same = {"Origin": f"http://127.0.0.1:{served.port}", "Sec-Fetch-Site": "same-origin"}
        target = f"/run/{RUN}/cancel"
        assert request(served, target, method="POST", form={}, headers=same).status == 403
        in_query = f"{target}?token={served.token}"
        assert request(served, in_query, method="POST", form={}, headers=same).status == 403
        answer = request(served, target, method="POST", form={"token": served.token}, headers=same)
        assert answer.status == 303
        assert answer.headers["location"].startswith(f"/run/{RUN}?")


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:1"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_a_cross_site_post_is_refused_even_with_the_token(
    repo: Path, headers: dict[str, str]
) -> None:
    write_run(repo, RUN, status=BUILDER)
    with serving(repo) as served:
        for action, form in (("cancel", {}), ("send", {"message": "hi"})):
            answer = request(
                served,
                f"/run/{RUN}/{action}",
                method="POST",
                form={**form, "token": served.token},
                headers=headers,
            )
            assert answer.status == 403, (action, headers)
        assert not (repo / "flows" / "feature" / "runs" / RUN / "cancel").exists()


def test_a_send_without_a_message_and_an_unknown_run_are_refused(repo: Path) -> None:
    write_run(repo, RUN, status=BUILDER)
    with serving(repo) as served:
        form = {"token": served.token, "message": "  "}
        assert request(served, f"/run/{RUN}/send", method="POST", form=form).status == 400
        other = "01900000-0000-7000-8000-00000000ffff"
        form = {"token": served.token}
        assert request(served, f"/run/{other}/cancel", method="POST", form=form).status == 404
        assert request(served, f"/run/{other}?token={served.token}").status == 404


def test_the_stream_delivers_an_event_appended_to_events_jsonl(repo: Path) -> None:
    run_dir = write_run(repo, RUN, status=BUILDER)
    with serving(repo) as served:
        stream = Stream(served)
        try:
            assert stream.response.status == 200
            assert stream.response.getheader("Content-Type").startswith("text/event-stream")
            with (run_dir / "events.jsonl").open("a") as handle:
                handle.write(json.dumps(event("agent:start", RUN, agent="builder", pid=7)) + "\n")
            got = stream.next_event()
            assert (got["run"], got["type"], got["state"]) == (RUN, "agent:start", "running")
            other = "01900000-0000-7000-8000-000000000002"  # a run that starts later
            write_run(repo, other, events=[event("agent:output", other, agent="b", tail="hello")])
            got = stream.next_event()
            assert (got["run"], got["text"]) == (other, "hello")
        finally:
            stream.close()


def test_the_stream_masks_secrets_in_agent_output(repo: Path) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    write_run(repo, RUN, events=[event("agent:output", RUN, agent="b", tail=f"token {secret}")])
    with serving(repo) as served:
        stream = Stream(served)
        try:
            got = stream.next_event()
        finally:
            stream.close()
        assert secret not in got["text"]
        page = request(served, f"/run/{RUN}?token={served.token}").body
        assert secret not in page


def test_hostile_run_texts_are_escaped_in_the_pages(repo: Path) -> None:
    report = repo / "flows" / "feature" / "agents" / "reviewer" / "report.complete.md"
    report.parent.mkdir(parents=True)
    report.write_text(f"# Review\n\n{HOSTILE}\n")
    write_run(
        repo,
        RUN,
        status={"state": "succeeded", "agent": HOSTILE, "kind": "review"},
        result={
            "status": "succeeded",
            "findings": [{"severity": "error", "file": HOSTILE, "line": 3, "message": HOSTILE}],
            "overall": "revise",
            "summary": HOSTILE,
            "run": {"agentId": HOSTILE, "kind": "review", "report": str(report)},
        },
        events=[event("agent:output", RUN, agent=HOSTILE, tail=HOSTILE)],
    )
    (repo / "flows" / "feature" / "runs" / RUN / "prompt_segments.json").write_text(
        json.dumps({"segments": [{"scope": HOSTILE, "label": HOSTILE, "source": HOSTILE,
                                  "lines": 1, "content": HOSTILE}]})
    )  # fmt: skip
    with serving(repo) as served:
        for target in ("/", f"/run/{RUN}"):
            answer = request(served, f"{target}?token={served.token}")
            assert answer.status == 200
            _escaped_everywhere(answer.body)


def test_a_hostile_step_title_is_escaped_in_the_plan_graph(repo: Path) -> None:
    plan = repo / "specs" / "feature.md"
    plan.parent.mkdir()
    plan.write_text(
        "# Plan: x\n\n## Implementation Steps\n\n"
        f"### Status: ❌ | Step 1: {HOSTILE}\n\nBody.\n\n"
        "### Status: ✅ | Step 2: Fine\n\nDepends on: 1\n"
    )
    with serving(repo) as served:
        answer = request(served, served.target("/plan", path="specs/feature.md"))
        assert answer.status == 200
        _escaped_everywhere(answer.body)
        assert answer.body.count('class="step ') == 2
        assert 'class="edge"' in answer.body


def test_a_plan_outside_the_repository_is_not_read(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("### Status: ❌ | Step 1: secret title\n")
    with serving(repo) as served:
        for path in (str(outside), "../secret.md", "nothing.md"):
            answer = request(served, served.target("/plan", path=path))
            assert answer.status == 400
            assert "secret title" not in answer.body


def test_a_report_path_outside_the_repository_is_not_read(repo: Path, tmp_path: Path) -> None:
    """A record is agent-writable: the report it names must stay inside the repository."""
    outside = tmp_path / "private.txt"
    outside.write_text("private words")
    write_run(repo, RUN, result={"status": "succeeded", "run": {"report": str(outside)}})
    with serving(repo) as served:
        body = request(served, f"/run/{RUN}?token={served.token}").body
    assert "private words" not in body


def test_a_real_chain_shows_its_step_agents_prompt_report_and_findings(repo: Path) -> None:
    chain.configure(repo, reviewer="revise")
    chain.run(repo, "--step", "1", "--max-iterations", "1")
    runs = repo / "flows" / "feature" / "runs"
    kinds = {
        p.parent.name: json.loads(p.read_text())["run"]["kind"] for p in runs.glob("*/result.json")
    }
    step = next(run_id for run_id, kind in kinds.items() if kind == "chain")
    reviewer = next(run_id for run_id, kind in kinds.items() if kind == "review")
    with serving(repo) as served:
        index = request(served, served.target("/")).body
        assert "step 1" in index and "specs/feature.md" in index
        page = request(served, served.target(f"/run/{step}")).body
        assert page.count('<li><a href="/run/') >= 2  # the builder and the reviewer
        assert "Mermaid chart" in page and "flowchart" in page
        page = request(served, served.target(f"/run/{reviewer}")).body
        assert page.count('class="segment"') >= 3  # recorded at its start
        assert 'class="finding"' in page and "REVIEW_RESULT" in page  # findings and report


def test_the_stream_sends_a_running_agents_spend_as_its_budgets_watch_reads_it(
    repo: Path,
) -> None:
    """The runs page's tokens and cost of a running agent follow what `status` shows."""
    spent = {"inputTokens": 3000, "outputTokens": 600, "costUsd": 0.018, "costEstimated": True}
    run_dir = write_run(repo, RUN, status=BUILDER)
    with serving(repo) as served:
        stream = Stream(served)
        try:
            (run_dir / "status.json").write_text(json.dumps({**BUILDER, "spent": spent}))
            got = stream.next_event()
            assert (got["run"], got["type"], got["tokens"]) == (
                RUN,
                "run:spent",
                "3,000/600 $0.0180 est.",
            )
        finally:
            stream.close()


def test_a_symlink_loop_a_request_or_a_record_names_answers_no_page_with_500(repo: Path) -> None:
    """Python 3.11's ``Path.resolve`` raises RuntimeError on a symlink loop: the plan asked
    for, a step run's plan and a run's report (records are agent-writable) each gave a 500."""
    specs = repo / "specs"
    specs.mkdir()
    (specs / "loopa").symlink_to("loopb")
    (specs / "loopb").symlink_to("loopa")
    step = "01a21f00-0000-7000-8000-0000000000aa"
    write_run(repo, step, result={"status": "failed", "chain": {"plan": "specs/loopa", "step": 1}})
    write_run(repo, RUN, result={"status": "succeeded", "run": {"report": "specs/loopa/../x"}})
    with serving(repo) as served:
        plan = request(served, served.target("/plan", path="specs/loopa"))
        assert plan.status == 400 and "not a plan file inside the repository" in plan.body
        index = request(served, served.target("/"))
        assert index.status == 200 and "specs/loopa" in index.body
        assert request(served, served.target(f"/run/{RUN}")).status == 200

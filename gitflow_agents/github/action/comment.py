"""The sticky summary comment: one per pull request, edited in place on every run.

Ours is the comment that carries ``MARKER`` **and** was written by our login: a comment by
someone else quoting the marker is never touched. The body holds the verdict, findings grouped
by severity, files not reviewed, questions from agents, which findings are inline, and the
run history (a step pull request's also draws the chain as a Mermaid flowchart); it stays under
GitHub's 65,536-character limit and says what was cut. A fenced block (a suggestion, the
flowchart) is never cut in its middle: it goes whole, and a flowchart that does not fit is left
out with a line saying so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitflow_agents.base.jsondata import JsonProblem, loads
from gitflow_agents.base.redact import redact_text
from gitflow_agents.findings import GateResult, Review
from gitflow_agents.github.api.client import Client, Comment, PullRequest
from gitflow_agents.github.api.identity import Identity, resolve
from gitflow_agents.render import TOOL_NAME, redacted
from gitflow_agents.render.markdown import code, escape, list_item, one_line
from gitflow_agents.render.markdown import render as render_markdown
from gitflow_agents.runs.spend import Spend, dollars

MARKER = "<!-- gitflow-agents:summary -->"
GITHUB_LIMIT = 65536
BUDGET = GITHUB_LIMIT - 1000
"""What we aim for: GitHub's limit with room for the cut notice (and for how GitHub counts)."""
COMMENT_LIMIT = f"GitHub's {GITHUB_LIMIT:,}-character comment limit"
IN_JOB_SUMMARY = (
    "Every finding is in the job summary of the workflow run and in the `findings-file` "
    "output of the action."
)
IN_FINDINGS_FILE = (
    "Every finding is in the findings file the run wrote (the `findings-file` output of the "
    "action; upload it as an artifact to keep it)."
)


@dataclass(frozen=True)
class RunRow:
    """One chain step in the run-history table (None: not known)."""

    flow: str
    agent: str
    outcome: str
    step: str | None = None
    iterations: int | None = None
    files_changed: int | None = None
    insertions: int | None = None
    deletions: int | None = None
    duration_s: float | None = None
    tokens: int | None = None  # input + output
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_estimated: bool = False  # cost_usd comes from the price table, not the agent CLI
    # a sum some of whose parts are unknown: the tokens / the cost shown are lower bounds
    tokens_partial: bool = False
    cost_partial: bool = False


def usage_fields(spend: Spend) -> dict[str, Any]:
    """A RunRow's usage fields from a run's (or a sum of runs') spend."""
    known = [n for n in (spend.input_tokens, spend.output_tokens) if n is not None]
    return {
        "tokens": sum(known) if known else None,
        "cost_usd": spend.cost_usd,
        "input_tokens": spend.input_tokens,
        "output_tokens": spend.output_tokens,
        "cost_estimated": spend.cost_estimated,
        "tokens_partial": spend.tokens_partial,
        "cost_partial": spend.cost_partial,
    }


def _cost(row: RunRow) -> str:
    """``$0.12``, ``~$0.12`` when estimated from the price table, ``unknown``; a cost under a
    cent with more decimals (``spend.dollars``: ``$0.0040``), never as ``$0.00``."""
    if row.cost_usd is None:
        return "unknown"
    estimated = "~" if row.cost_estimated else ""
    return _at_least(row.cost_partial) + estimated + dollars(row.cost_usd)


def _at_least(partial: bool) -> str:
    return "≥ " if partial else ""


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def float_or_none(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _cell(text: str) -> str:
    """Untrusted text in a table cell: inert, on one line, its pipes escaped."""
    return one_line(text).replace("|", "\\|")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def run_history(rows: Sequence[RunRow]) -> str:
    """The run-history table (empty string for no rows)."""
    if not rows:
        return ""
    out = [
        "| step | flow | agent | outcome | iterations | git | duration | tokens | cost |",
        "|---|---|---|---|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        git = "—"
        if row.files_changed is not None:
            git = f"{row.files_changed} files +{row.insertions or 0} −{row.deletions or 0}"
        out.append(
            "| "
            + " | ".join(
                [
                    _cell(row.step or "—"),
                    _cell(row.flow),
                    _cell(row.agent),
                    _cell(row.outcome),
                    str(row.iterations) if row.iterations is not None else "—",
                    git,
                    _duration(row.duration_s),
                    _at_least(row.tokens_partial) + f"{row.tokens:,}"
                    if row.tokens is not None
                    else "unknown",
                    _cost(row),
                ]
            )
            + " |"
        )
    return "\n".join(out)


def summary_body(
    review: Review,
    gate: GateResult | None,
    *,
    rows: Sequence[RunRow] = (),
    questions: Sequence[str] = (),
    inline_note: str = "",
    notices: Sequence[str] = (),
    footer: str = "",
    limit: int | None = BUDGET,
    where: str = IN_JOB_SUMMARY,
    chart: str = "",
    state: str = "",
) -> str:
    """The full comment body, marker first (then ``state``, the hidden ``state_line``), capped to ``limit`` (None: not at all) by ``cap``,
    whose notice says ``where`` every finding is. Everything in it that an agent wrote is masked
    (``redact``) and inert (``render.markdown.escape``). ``chart``: a fenced Mermaid flowchart
    (``render.mermaid.step_flowchart_markdown``) shown above the run-history table when the
    whole body fits ``limit`` with it; otherwise a line says it was left out (``CHART_LEFT_OUT``):
    the findings come first."""
    review, gate = redacted(review, gate)
    parts = [f"{MARKER}\n{state}" if state else MARKER, render_markdown(review, gate).rstrip()]
    if review.kind:
        parts.append(f"**Review:** {escape(review.kind_reason or review.kind)}")
    if inline_note:
        parts.append(inline_note)
    if notices:
        parts.append("\n".join("> [!NOTE]\n> " + escape(n).replace("\n", "\n> ") for n in notices))
    if questions:
        items = (list_item(redact_text(q)) for q in questions)
        parts.append("#### Questions from agents\n\n" + "\n".join(items))
    table = run_history(rows)
    tail = [f"<sub>{footer}</sub>"] if footer else []

    def joined(*history: str) -> str:
        section = ["#### Run history\n\n" + "\n\n".join(history)] if history else []
        return "\n\n".join([*parts, *section, *tail]) + "\n"

    tables = (table,) if table else ()
    body = joined(chart.rstrip("\n"), *tables) if chart else joined(*tables)
    if chart and limit is not None and len(body) > limit:
        body = joined(CHART_LEFT_OUT, *tables)  # the chart goes whole, never cut in its fence
    return body if limit is None else cap(body, limit, where=where)


def unfinished_body(
    head_sha: str, why: str, *, rows: Sequence[RunRow] = (), footer: str = "", state: str = ""
) -> str:
    """The comment for a review of ``head_sha`` that did not complete (``why``: its error,
    masked and made inert here; the agent's reason may be quoted in it): no verdict, so
    nothing in it reads as an approval, with the run's ``rows`` (what it spent). ``state``:
    the hidden line of the earlier reviews (``state_of``), kept for the next, incremental
    review; this run recorded no review."""
    parts = [
        f"{MARKER}\n{state}" if state else MARKER,
        f"### ❌ {TOOL_NAME} review: DID NOT COMPLETE",
        f"The review of {code(head_sha[:12])} did not complete, so it is not approved (the "
        f"commit status {code('gitflow-agents/review')} is {code('error')}):",
        list_item(redact_text(why)),
    ]
    table = run_history(rows)
    if table:
        parts.append("#### Run history\n\n" + table)
    if footer:
        parts.append(f"<sub>{footer}</sub>")
    return cap("\n\n".join(parts) + "\n")


def footer(pull: PullRequest, run_url: str | None) -> str:
    text = f"gitflow-agents · head {pull.head_sha[:12]}"
    return text + (f" · [workflow run]({run_url})" if run_url else "")


CHART_LEFT_OUT = (
    f"_The flowchart of this run is left out: with it, this comment would pass {COMMENT_LIMIT}._"
)


def _open_fence(lines: Sequence[str]) -> int | None:
    """The index of the line opening a fenced block that ``lines`` leave unclosed (None: every
    block is closed). A fence is three or more backticks or tildes, indented up to three blanks
    (or under a list item, as a suggestion is); a longer or equal run of the same character
    closes it."""
    opened: tuple[int, str] | None = None
    for index, line in enumerate(lines):
        text = line.lstrip(" ")
        run = len(text) - len(text.lstrip(text[:1])) if text[:1] in ("`", "~") else 0
        if opened is None:
            if run >= 3:
                opened = (index, text[:run])
        elif run >= len(opened[1]) and text[:1] == opened[1][0] and not text[run:].strip():
            opened = None
    return None if opened is None else opened[0]


def cap(
    body: str, limit: int = BUDGET, *, where: str = IN_JOB_SUMMARY, why: str = COMMENT_LIMIT
) -> str:
    """``body`` cut at a line boundary to fit ``limit``, open ``<details>`` closed, and a
    notice saying how much was cut (and how many findings), because of ``why``, and ``where``
    every finding is, appended."""
    if len(body) <= limit:
        return body
    lines = body.split("\n")
    kept: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 > limit:
            break
        kept.append(line)
        size += len(line) + 1
    inside = _open_fence(kept)
    if inside is not None:  # never end inside a fenced block: it goes whole
        size -= sum(len(line) + 1 for line in kept[inside:])
        kept = kept[:inside]
    cut = lines[len(kept) :]
    cut_findings = sum(1 for line in cut if line.startswith("- "))
    opened = sum(line.startswith("<details") for line in kept) - sum(
        line.startswith("</details>") for line in kept
    )
    kept += ["", "</details>"] * max(opened, 0)
    cut_chars = len(body) - size
    what = f"{len(cut)} lines ({cut_chars:,} characters"
    what += f", {cut_findings} findings)" if cut_findings else ")"
    kept += [
        "",
        f"> ✂️ **Cut to stay under {why}:** {what} not shown here. {where}",
        "",
    ]
    return "\n".join(kept)


def is_marked(comment: Comment, marker: str = MARKER) -> bool:
    return comment.body.lstrip().startswith(marker)


def is_ours(comment: Comment, login: str | None, marker: str = MARKER) -> bool:
    return login is not None and comment.author == login and is_marked(comment, marker)


@dataclass(frozen=True)
class StickyResult:
    comment_id: int
    action: str
    """``created``, ``updated`` or ``unchanged`` (same body: no write at all)."""
    removed_duplicates: int = 0


def marked_comments(client: Client, repo: str, number: int, marker: str = MARKER) -> list[Comment]:
    """The conversation comments carrying ``marker``, whoever wrote them."""
    return [c for c in client.issue_comments(repo, number) if is_marked(c, marker)]


def our_comments(
    client: Client, repo: str, number: int, login: str | Identity, marker: str = MARKER
) -> list[Comment]:
    """Our comments carrying ``marker``, oldest first (more than one: an earlier run left a
    duplicate)."""
    marked = marked_comments(client, repo, number, marker)
    me = resolve(login, marked)
    return sorted((c for c in marked if is_ours(c, me, marker)), key=lambda c: c.id)


# A run-history row's duration cell (then its tokens and cost): ``_duration``'s forms.
_DURATION_CELL = re.compile(
    r"^(\|.* \| )(?:\d+\.\d s|\d+ min \d{2} s)( \| [^|]* \| [^|]* \|)$", re.M
)


def _timeless(body: str) -> str:
    """``body`` without its run-history durations: a re-run of the same event, whose row
    differs only in how long it took, leaves the comment as it is (no write)."""
    return _DURATION_CELL.sub(r"\1…\2", body)


def _write(
    client: Client,
    repo: str,
    number: int,
    ours: list[Comment],
    body: str,
    *,
    login: str | Identity,
    marker: str,
) -> StickyResult:
    """Edit the oldest of ``ours`` to ``body`` and delete the others; create when none."""
    if not ours:
        made = client.create_issue_comment(repo, number, body)
        return _converged(client, repo, number, made, body, login=login, marker=marker)
    keep, *extra = ours
    for duplicate in extra:
        client.delete_issue_comment(repo, number, duplicate.id)
    if _timeless(keep.body) == _timeless(body):
        return StickyResult(keep.id, "unchanged", len(extra))
    client.edit_issue_comment(repo, number, keep.id, body)
    return StickyResult(keep.id, "updated", len(extra))


def _converged(
    client: Client,
    repo: str,
    number: int,
    made: Comment,
    body: str,
    *,
    login: str | Identity,
    marker: str,
) -> StickyResult:
    """After our create of ``made``: another run that found none at the same moment (two runs
    of one pull request with no ``concurrency`` group) made one too. The comments are read
    again; the oldest of ours stays (given ``body`` when it is not the one just made) and the
    later ones are deleted. Every run doing the same keeps that same oldest one, which each of
    them sees (it was made before its own), so one comment remains and never none; a delete the
    other run made first is a 404, which is fine (``Client.delete_issue_comment``)."""
    found = our_comments(client, repo, number, login, marker)
    if not found:  # a racer deleted ours (it kept an older one, gone since): as it was made
        return StickyResult(made.id, "created")
    keep, *extra = found
    for duplicate in extra:
        client.delete_issue_comment(repo, number, duplicate.id)
    if keep.id == made.id:
        return StickyResult(keep.id, "created", len(extra))
    if _timeless(keep.body) == _timeless(body):
        return StickyResult(keep.id, "unchanged", len(extra))
    client.edit_issue_comment(repo, number, keep.id, body)
    return StickyResult(keep.id, "updated", len(extra))


def upsert_summary(
    client: Client,
    repo: str,
    number: int,
    body: str,
    *,
    login: str | Identity,
    marker: str = MARKER,
) -> StickyResult:
    """Create our summary comment (or another sticky comment, by its ``marker``), or edit the
    one we wrote before.

    Should an earlier run have left two (a create retried after GitHub had in fact stored it),
    the oldest is kept and edited and the extra ones of ours are deleted. After a create the
    comments are read again, so two runs that both found none and both created one leave one
    (``_converged``).
    """
    if not body.startswith(marker):
        body = f"{marker}\n{body}"
    ours = our_comments(client, repo, number, login, marker)
    return _write(client, repo, number, ours, body, login=login, marker=marker)


def with_rows(body: str, rows: Sequence[RunRow]) -> str:
    """``body`` with ``rows`` added at the end of its run-history table (a table of their own
    when it has none, before the footer), cut again to the limit if need be."""
    table = run_history(rows).split("\n")
    lines = body.rstrip("\n").split("\n")
    header = next((i for i, line in enumerate(lines) if line == table[0]), None)
    if header is not None:
        end = header + 1
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        lines[end:end] = table[2:]
    else:
        tail = next(
            (i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith(("<sub>", "> ✂️"))),
            len(lines),
        )
        lines[tail:tail] = ["#### Run history", "", *table, ""]
    return cap("\n".join(lines) + "\n")


def add_history(
    client: Client,
    repo: str,
    number: int,
    rows: Sequence[RunRow],
    *,
    login: str | Identity,
    body_if_none: str,
) -> StickyResult:
    """A run about a head that is no longer the PR's: its ``rows`` join the run history of our
    summary comment, whose verdict (about the newer head) stays. With no summary comment yet,
    ``body_if_none`` is posted."""
    ours = our_comments(client, repo, number, login)
    body = with_rows(ours[0].body, rows) if ours else body_if_none
    return _write(client, repo, number, ours, body, login=login, marker=MARKER)


_STATE = re.compile(r"^<!-- gitflow-agents:state (.*) -->$", re.MULTILINE)
MAX_STATES = 3
"""Reviewed heads the summary comment remembers: the newest, and the ones before it, so that
re-running an older event finds the head it built on (docs/github.md, "Incremental review")."""
MAX_STATE_CHARS = 24_000
"""At most this much of the comment holds the state; older heads, then the new one's open
findings, give way (a head not remembered means a full review next time)."""


def recorded_states(body: str) -> list[dict[str, Any]]:
    """The reviewed heads our summary comment ``body`` records, newest first (each
    ``reviewedSha``, ``baseSha``, ``agent``, ``openFindings``, ``scopeDigest``); none when it records none or
    what it holds is not that."""
    match = _STATE.search(body)
    if match is None:
        return []
    try:
        data = loads(match.group(1))
    except JsonProblem:
        return []
    items = data.get("reviews") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, dict) and isinstance(i.get("reviewedSha"), str)]


def state_of(body: str | None) -> str:
    """The hidden state line of our summary comment ``body`` as it is ("" when none)."""
    match = _STATE.search(body or "")
    return match.group(0) if match else ""


def state_line(review: Review, agent: str, earlier: Sequence[dict[str, Any]]) -> str:
    """The hidden line recording ``review`` (its head, base, reviewer, open findings and scope
    digest) before the ``earlier`` states of other heads; "" when the review is about no
    commit. JSON with ``<``, ``>`` and ``&`` escaped, so no text in it can end the HTML
    comment."""
    if not review.reviewed_sha:
        return ""
    this = {
        "reviewedSha": review.reviewed_sha,
        "baseSha": review.base_sha or "",
        "agent": agent,
        "kind": review.kind or "full",
        "openFindings": [f.to_dict() for f in review.findings],
        **({"scopeDigest": review.scope_digest} if review.scope_digest else {}),
    }
    older = [s for s in earlier if s.get("reviewedSha") != review.reviewed_sha]
    for states in (
        *([this, *older[:n]] for n in range(MAX_STATES - 1, -1, -1)),
        [{**this, "openFindings": None}],
    ):
        text = json.dumps({"reviews": states}, ensure_ascii=False, separators=(",", ":"))
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        if len(text) <= MAX_STATE_CHARS:
            return f"<!-- gitflow-agents:state {text} -->"
    return ""


def our_summary(client: Client, repo: str, number: int, login: str | Identity) -> str | None:
    """The body of our summary comment on pull request ``number`` (None: there is none)."""
    ours = our_comments(client, repo, number, login)
    return ours[0].body if ours else None

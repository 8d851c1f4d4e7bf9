"""A step pull request's title and body: the tool's part of them, and what stays a human's.

The tool's text (a line linking the plan, the step's text) lives in one marked section of the
body, between ``<!-- gitflow-agents:step "PLAN" N title:HASH -->`` and
``<!-- gitflow-agents:step-end -->``, like the sticky comment's marker. Updating the pull
request replaces that section only: what a human wrote above or below it stays. The title is
the tool's only while it is the title the tool set last (``HASH`` is that title's digest): a
title a human edited is never set again. The start marker also says that a pull request is a
plan step's (``is_step_pull``): ``publish.py`` takes the changes-requested label off such a pull
request when its gate turns green. docs/github.md, "Plan steps as pull requests".
"""

from __future__ import annotations

import hashlib
import json
import re

from gitflow_agents.render.markdown import escape

CHANGES_LABEL = "gitflow-agents: changes requested"
"""The label of a step pull request whose last review asked for changes."""
START = "<!-- gitflow-agents:step {plan} {step}{title} -->"
END = "<!-- gitflow-agents:step-end -->"
_START = re.compile(
    r'<!-- gitflow-agents:step ("(?:[^"\\]|\\.)*") (\d+)(?: title:([0-9a-f]{16}))? -->'
)


def title_digest(title: str) -> str:
    return hashlib.sha256(title.encode()).hexdigest()[:16]


def section(plan_rel: str, step: int, content: str, link: str | None) -> str:
    """The tool's section: the step's text under a line linking the plan, between the markers
    (the start marker names plan and step; ``stamped`` adds the title's digest)."""
    where = f"[`{plan_rel}`]({link})" if link else f"`{plan_rel}`"
    plan = json.dumps(plan_rel).replace("<", "\\u003c").replace(">", "\\u003e")  # no "-->"
    start = START.format(plan=plan, step=step, title="")
    text = escape(content.strip())
    return f"{start}\nStep {step} of the plan {where}, run by gitflow-agents.\n\n{text}\n{END}"


def stamped(body_section: str, digest: str | None) -> str:
    """``body_section`` whose start marker records ``digest`` (``title_digest`` of the title the
    tool set; None: none)."""
    title = f" title:{digest}" if digest else ""
    return _START.sub(
        lambda m: START.format(plan=m.group(1), step=m.group(2), title=title), body_section, 1
    )


def is_step_pull(body: str) -> bool:
    """Whether ``body`` holds a step section (the pull request is a plan step's)."""
    return _START.search(body) is not None


def tool_title(body: str) -> str | None:
    """The digest of the title the tool set last, as the body's section records it."""
    found = _START.search(body)
    return found.group(3) if found else None


def merged_body(current: str, new_section: str) -> str:
    """``current`` with its step section replaced by ``new_section``; everything else in it kept.
    A section whose end marker a human removed runs to the end of the body; a body without a
    section gets ``new_section`` appended below what it holds."""
    found = _START.search(current)
    if found is None:
        return f"{current.rstrip()}\n\n{new_section}\n" if current.strip() else f"{new_section}\n"
    end = current.find(END, found.end())
    stop = len(current) if end < 0 else end + len(END)
    return current[: found.start()] + new_section + (current[stop:] if end >= 0 else "\n")


def update(
    current_title: str, current_body: str, title: str, new_section: str
) -> tuple[str | None, str | None]:
    """(title, body) to write to an open step pull request, None for each that stays as it is:
    the title only while it is still the tool's own (the one the section records, or already
    ``title``), the body with only its section replaced. A human's title is kept, and the
    section goes on recording the title the tool set last."""
    recorded = tool_title(current_body)
    ours = current_title == title or recorded == title_digest(current_title)
    digest = title_digest(title) if ours else recorded
    body = merged_body(current_body, stamped(new_section, digest))
    return (title if ours and current_title != title else None), (
        body if body != current_body else None
    )

"""``gitflow-agents spawn``: run one agent on a plan step, supervised, and record the run.

Exit 0 when the agent succeeded (renamed its report to ``report.complete.md``), 3 when it failed,
got stuck, timed out, crashed or was canceled, 5 when its budget stopped it (``--budget-usd``,
``--budget-tokens``, ``.flow/`` ``budget.agent``), 6 when its model API refused it for longer
than ``defaults.rate_limit_wait_secs``, 130 on Ctrl-C / SIGTERM (the agent's whole
process tree is killed first). ``result.json`` is written in every case (``agent_run.run.execute``).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.agent_run.launch import report_files
    from gitflow_agents.agent_run.record import exit_code, print_result
    from gitflow_agents.agent_run.run import AgentJob, clear_previous, execute, limits
    from gitflow_agents.commands.budget import ledger_from
    from gitflow_agents.prompt import (
        agent_dir,
        assemble_prompt,
        default_agent_id,
        default_flow_name,
    )
    from gitflow_agents.prompt.args import prompt_request

    request = prompt_request(args, "spawn", flow=args.flow)
    root, config = request.root, request.config
    agent_cfg = config.agent(args.agent)
    flow_name = default_flow_name(request)
    agent_id = request.agent_id or default_agent_id(args.agent, args.step)
    prompt = assemble_prompt(request)
    kind = args.kind or _default_kind(agent_cfg.type, args.agent)
    files = report_files(config, args.agent, agent_dir(root, config.flow_dir, flow_name, agent_id))
    clear_previous(files, rerun=args.rerun)
    budget = ledger_from(args, config, "agent")
    budget.refuse(agent_cfg.adapter)  # a limit of 0: nothing may be spent
    job = AgentJob(
        root=root,
        config=config,
        agent=args.agent,
        agent_id=agent_id,
        flow_name=flow_name,
        kind=kind,
        prompt_text=prompt.text,
        prompt_segments=prompt.segments,
        limits=limits(
            config,
            stuck_timeout=args.stuck_timeout,
            timeout=args.timeout,
            kill_grace=args.kill_grace,
        ),
        card=Path(args.card).absolute() if args.card else None,
        queued_line=lambda run_id: _queued_line(kind, run_id, args, root),
        quiet=args.quiet,
        step=args.step,
        budget=budget,
        control=True,
        # an implementer's report: the tool's git statistics (docs/configuration.md)
        stats_against=(config.chain.target or config.default_branch)
        if kind == "implement"
        else None,
    )
    result = execute(job)
    print_result(result, as_json=args.json, root=root)
    return int(exit_code(result))


def _default_kind(agent_type: str, agent: str) -> str:
    """review for reviewer agents, research for researchers, else implement."""
    text = f"{agent_type} {agent}".lower()
    if "review" in text:
        return "review"
    if "research" in text:
        return "research"
    return "implement"


def _queued_line(kind: str, run_id: str, args: argparse.Namespace, root: Path) -> str:
    """The card's history line for a queued run (``--branch``, else the checked-out branch;
    "HEAD" only on a detached HEAD or outside git)."""
    from gitflow_agents.git import queries as git
    from gitflow_agents.runs.cards import history_line

    branch = args.branch or git.current_branch(root) or "HEAD"
    if kind == "review":
        return history_line("review", "queued", run_id=run_id, target=branch)
    if kind == "research":
        return history_line("research", "queued", run_id=run_id, topic=args.task or "")
    return history_line("implement", "queued", run_id=run_id, branch=branch)

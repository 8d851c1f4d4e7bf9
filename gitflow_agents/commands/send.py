"""``gitflow-agents send RUN_ID MESSAGE`` (alias ``reply``): a message to an agent.

A RUNNING agent gets it through its orchestrator's control channel (``runs/control.py``): now,
when its CLI takes input mid-run (Claude Code), else queued for the next turn of its session,
and the command says which. An orchestrator that takes the message and does not answer within
``--wait`` leaves it NOT CONFIRMED (exit 75); the same ``send`` again never gives it twice. A FINISHED run's session is continued: the message (after those
queued for it) becomes the next user turn of the CLI session the run recorded, as a new run
linked to it (``sessions.py`` says how sessions work and end). Options that end a session:

- ``--max-turns N``: at most N turns in the session (the spawn is turn 1); recorded, so later
  sends keep the limit; the session closes when its last allowed turn has run;
- ``--close``: marks the session closed; later sends are refused. Messages queued for its next
  turn (sent while it ran) are not sent: it says how many, and leaves them in ``inbox/``.

Refused (exit 2, one line): no MESSAGE or a blank one, an adapter whose CLI cannot resume, a run that recorded no session id,
a run still running, a lost run (its orchestrator died: it never finishes; ``cancel`` it), a run
that is not the session's latest turn, a closed session.
``abort RUN_ID`` is ``cancel``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gitflow_agents.base.errors import UsageError


def run(args: argparse.Namespace) -> int:
    from gitflow_agents.agent_run import sessions
    from gitflow_agents.agent_run.record import exit_code, print_result
    from gitflow_agents.agent_run.run import limits
    from gitflow_agents.agent_run.send_target import refuse_step_run
    from gitflow_agents.config import load_flow_config, project_root
    from gitflow_agents.runs.control import (
        INBOX,
        NotRunning,
        already_sent,
        earlier_send,
        queued_ids,
        queued_messages,
        send_message,
        settled,
    )

    if args.message is not None and not args.message.strip() and not args.close:
        # a turn of its own, paid for, saying nothing (the page refuses a blank one too)
        raise UsageError(
            "send: the MESSAGE is blank: give a MESSAGE (or --close to end the session)"
        )
    root = project_root(Path.cwd())
    config = load_flow_config(root, args.flow_type, args.variant)
    if args.message is not None and not args.close:
        try:
            sent = send_message(
                root,
                args.run_id,
                args.message,
                flow_dir=config.flow_dir,
                event=args.session_event,
                wait=float(args.wait),
            )
        except NotRunning:
            pass  # ended (or lost): its session is continued below, or refused as before
        else:
            if args.json:
                said = {"runId": sent.run_id, "delivery": sent.delivery, "said": sent.line}
                print(json.dumps(said, ensure_ascii=False))
            else:
                print(sent.line)
            return 0
    prior = sessions.finished_run(root, config.flow_dir, args.run_id)
    refuse_step_run(root, config.flow_dir, prior)
    earlier = None if args.close else earlier_send(prior.paths.run_dir, args.message or "")
    if earlier is not None:  # sent while it ran, unconfirmed: what became of it decides
        settled(earlier.note)
        waiting = earlier.message_id in queued_ids(prior.paths.run_dir)
        if earlier.delivery == "now" or (earlier.delivery == "queued" and not waiting):
            delivery = "now" if earlier.delivery == "now" else "turn"  # mid-run, a later turn
            line = already_sent(prior.run_id, delivery)
            if args.json:
                print(json.dumps({"runId": prior.run_id, "delivery": delivery, "said": line}))
            else:
                print(line)
            return 0
    path = sessions.session_path(root, config.flow_dir, prior)
    session = sessions.load_session(path, prior)
    if args.close:
        if sessions.close_session(path, session, "closed by gitflow-agents send --close"):
            print(f"closed session {session['root']} after {session.get('turns', 1)} turn(s)")
        else:
            print(f"session {session['root']} was already closed ({session.get('closedReason')})")
        unsent = queued_messages(prior.paths.run_dir)  # sent while it ran, for a next turn
        if unsent:  # there is none now: said, and left where they are
            folder = prior.paths.run_dir / INBOX
            print(f"{len(unsent)} message(s) queued for its next turn were never sent ({folder})")
        return 0
    if args.message is None:
        raise UsageError("send: give a MESSAGE (or --close to end the session)")
    sessions.check_open(session, prior.run_id)
    max_turns = args.max_turns if args.max_turns is not None else session.get("maxTurns")
    sessions.check_turns_left(path, session, max_turns)
    queued = queued_messages(prior.paths.run_dir)  # sent while it ran, for this turn
    texts = [text for _, text in queued]
    if earlier is None or earlier.delivery is None:  # else it is one of those queued
        texts.append(args.message)
    message = "\n\n".join(texts)
    # The adapter first: a CLI that cannot resume is the real reason, with or without an id.
    turn = sessions.prepare_turn(root, config, prior, message)
    result = sessions.run_turn(
        root,
        config,
        turn,
        prior,
        message=message,
        path=path,
        session=session,
        max_turns=max_turns,
        limits=limits(
            config,
            stuck_timeout=args.stuck_timeout,
            timeout=args.timeout,
            kill_grace=args.kill_grace,
        ),
        quiet=args.quiet,
        message_event=args.session_event,
    )
    for queued_file, _ in queued:  # they went with this turn
        queued_file.unlink(missing_ok=True)
    print_result(result, as_json=args.json, root=root)
    final = sessions.read_session(path)
    if final.get("closed") and not args.json:
        print(f"session {session['root']} is now closed: {final.get('closedReason')}")
    return int(exit_code(result))

"""Who our token writes as, so our own comments are recognised without configuration.

A comment is ours only when it carries our marker **and** was written by our login: a user
quoting the marker is never edited. The login is, in this order (docs/github.md, "Who we are"):

1. the ``comment-author`` input, when set, until the run learns the login it really writes as
   (2.): when that differs, the real one wins (a configured login the token does not write as
   would find none of our comments, and every run would post again), with one warning;
2. the author GitHub showed for something this run created (the ``pending`` status is the
   first write of a review run, and its ``creator`` is the token's login: ``github-actions[bot]``
   for ``GITHUB_TOKEN``, ``<app-slug>[bot]`` for a GitHub App's installation token);
3. ``GET /user`` for a personal token (an installation token gets 403 there and is not asked);
4. the author of the marked comments written through a GitHub App
   (``performed_via_github_app`` / ``user.type == "Bot"``): only the product writes its marker,
   and only an App installed on the repository writes as a bot. None of them: nothing here is
   ours yet, and whatever this run creates teaches the client its login.

Two different Apps' marked comments and nothing else to go by: that is the one case identity
cannot be learned, and the run stops with one line naming the input to set (``settle`` makes
that happen before anything is written).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gitflow_agents.base.errors import UsageError
from gitflow_agents.github.api.client import Client, Comment
from gitflow_agents.render.annotations import command


class Identity:
    """The login our writes appear under, found as the module docstring says."""

    def __init__(self, client: Client, configured: str | None = None) -> None:
        self.client = client
        self.configured = configured or None

    def login(self, marked: Iterable[Comment]) -> str | None:
        """Our login; None when nothing in ``marked`` (comments carrying our marker) can be
        ours. UsageError when marked comments of two Apps leave it open."""
        writer = self.client.writer
        if self.configured:
            if writer is None or writer.casefold() == self.configured.casefold():
                return writer or self.configured
            self._mismatch(writer)  # the login we really write as wins
        if writer:
            return writer
        user = self.client.login()
        if user:
            return user
        return self._from(marked)

    def _mismatch(self, writer: str) -> None:
        """One warning per run (per client) that ``comment-author`` is not who we write as."""
        if self.client.told_writer == writer:
            return
        self.client.told_writer = writer
        message = (
            f"comment-author is {self.configured}, but this token writes as {writer} (the author "
            f"GitHub shows for what this run created): the comments of {writer} are taken as "
            f"ours; set comment-author to {writer}, or leave it empty to have it learned"
        )
        print(command("warning", message, title="gitflow-agents"), flush=True)

    def settle(self, marked: Callable[[], Iterable[Comment]]) -> None:
        """Before the first write: when only the marked comments (``marked()``, read only in
        that case) can tell who we are, judge them now, so a run whose identity cannot be
        learned stops before it posts anything."""
        if not (self.configured or self.client.writer or self.client.login()):
            self._from(marked())

    def _from(self, marked: Iterable[Comment]) -> str | None:
        apps = sorted({c.author for c in marked if c.bot or c.app})
        if len(apps) > 1:
            raise UsageError(
                f"cannot tell which of {', '.join(apps)} this token writes as (an installation "
                "token cannot ask GitHub who it is): set the action's comment-author input to "
                "its login"
            )
        return apps[0] if apps else None


def resolve(login: str | Identity, marked: Iterable[Comment]) -> str | None:
    """``login`` itself when the caller knows it, else what ``Identity`` finds."""
    return login if isinstance(login, str) else login.login(marked)

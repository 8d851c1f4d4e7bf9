"""The git boundary: running git (``cmd``), named queries (``queries``), work trees
(``worktree``), remotes (``remote``), reading diff output (``diffparse``) and the statistics
the tool computes itself (``stats``). Everything above talks to git through these modules."""

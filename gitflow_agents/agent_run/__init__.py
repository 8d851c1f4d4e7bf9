"""One agent run from prepare to record: ``run`` (prepare → run → record: the one way to run
an agent), ``launch`` (report paths, the adapter's launch), ``sessions`` (continuing a finished
session), ``send_target`` (what ``send`` continues; who and where a finished run ran:
``prior_run``) and ``protocol`` (the structured reply)."""

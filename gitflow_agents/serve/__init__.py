"""``gitflow-agents serve``: a local web page that watches runs and plans (docs/serve.md).

``security.py`` says who may ask (the per-start token, same-origin writes, the headers every
answer carries); ``stream.py`` follows the ``events.jsonl`` files as they grow; ``views.py``
reads runs, plans and agent runs into what the page shows; ``graph.py`` draws a plan's graph
as SVG; ``control.py`` forwards send and cancel; ``server.py`` answers HTTP.
"""

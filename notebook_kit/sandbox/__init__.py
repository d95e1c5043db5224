"""Running action code where it cannot reach what serves everyone.

Action code runs only in sandboxed processes: processes started clean (no descriptor of
the store, an environment without notebook_kit's settings) that confine themselves
before anything else, by the kernel's rules (``inside.confine``: Landlock, no
capabilities, no Unix sockets). What they may touch is worked out on the trusted side
(``plan``); what runs in them lives in ``inside/``; what they ask of the trusted side
travels as framed JSON (``protocol``) and is answered by ``builtins.services``.

Two ways to use them: ``runner.ActionRunner`` for the trusted side's own runs (the Test
tab, ``ws.invoke``, examples, replay, the deploy's load check: a fresh process per run),
and ``runtime`` for a server (its workers are sandboxed processes themselves, and pass
slow calls to action processes of their own). ``outcome`` is how a call ended, the same
for both.
"""

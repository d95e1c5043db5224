"""The server: the only layer that imports Sanic, laid out by which process runs what.

``process/`` the processes: the supervisor (trusted: holds the store, pushes snapshots,
writes the log, watches and replaces workers), an HTTP worker's life (sandboxed), the
handles that start a server (``serve``, ``BackgroundServer``, ``ServerProcess``,
``serve --detach``). ``serve/`` one request, in a worker: dispatch, the answers, the
Sanic app and its guards. ``reload/`` following deploys: what the supervisor reads and
sends (``feed``, ``store_link``), what a worker builds and switches to (``builder``,
``follower``, ``live``). Running action code is the ``sandbox`` layer's.

Nothing is imported here eagerly, so ``notebook_kit.runtime.process.handles`` can be
imported (by the CLI) without loading the web framework.
"""

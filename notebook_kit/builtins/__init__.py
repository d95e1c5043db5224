"""What an action reaches: ``fn``, ``db``, ``http`` and the services behind them.

Each built-in is given a small context (store, home, settings), never the Workspace.
"""

"""The Sanic runtime and the server handles: the only layer that imports Sanic.

Nothing is imported here eagerly, so ``notebook_kit.runtime.server`` can be imported
(by the CLI, for a child server process) without loading the web framework.
"""

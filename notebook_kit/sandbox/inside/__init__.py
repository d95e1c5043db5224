"""What runs inside a sandboxed process: its confinement, the zygote that forks action
processes, an action process's loop, and the built-ins it asks of the trusted side."""

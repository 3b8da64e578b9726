"""A local stand-in for the tracker (later also the wiki and forms) on loopback.

Start one with :func:`sandbox.server.start_sandbox` (tests, benchmarks) or ``haul sandbox
serve`` / ``python -m sandbox`` (a rehearsal).  Nothing in ``connectors``, ``state`` or
``pipelines`` imports this package, and it imports none of them.
"""

"""The commands, each a library function the CLI's few lines call: `run` (extract, load and run,
through the engine), `check`, `plan`, `verify`, `status`, `failures`, `undo` and `demo`; the
`*_cli` modules turn a command's result into what the terminal shows.
"""

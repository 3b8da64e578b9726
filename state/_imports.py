"""Import sqlite-utils without pandas and numpy (imported first by ``haul.state``).

sqlite-utils imports both only to map their scalar types to column types, and haul never
inserts them; loading them cost every command 0.6 s of CPU and 80 MB of memory before any
work (`bench/memory.py`). They stay importable afterwards.
"""

import sys

_hidden = [name for name in ("pandas", "numpy") if name not in sys.modules]
for _name in _hidden:
    sys.modules[_name] = None  # type: ignore[assignment]  # import fails, sqlite-utils skips it
try:
    import sqlite_utils  # noqa: F401
finally:
    for _name in _hidden:
        del sys.modules[_name]

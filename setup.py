"""Install the top-level package folders under one namespace: `connectors/` is `haul.connectors`.

The folders stay where DESIGN.md puts them; only their installed names change, so that no
module with a generic name (`state`, `sandbox`, ...) lands at the top of site-packages.
Everything else about the distribution is in pyproject.toml.
"""

from setuptools import find_packages, setup

FOLDERS = ("connectors", "state", "pipelines", "sandbox", "orchestrate")

setup(
    packages=[f"haul.{name}" for name in find_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={f"haul.{folder}": folder for folder in FOLDERS},
)

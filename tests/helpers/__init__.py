"""What the tests share: clients of the sandbox, configs, snapshots of orgs, runs of `haul`.

Test modules import these as `tests.helpers.<module>` (the repository root is on the path, set
by `pythonpath` in pyproject.toml); fixtures stay in the conftest.py of each folder. A test
module never imports another test module or a conftest: what two tests share lives here.
"""

"""haul's test suite: a package, so every test module and conftest has a dotted name of its own
(`tests.sandbox.conftest`, not a bare `conftest` shared by nine folders) and any order of test
folders collects alike; the helpers the tests share are `tests.helpers`."""

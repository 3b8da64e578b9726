"""Tests of the project's shape: installation, the import graph, the test suite's layout."""

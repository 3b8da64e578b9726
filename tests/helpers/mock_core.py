"""What the `make_core` fixture (tests/connectors/conftest.py) builds its HttpCore with: the
token a test checks is never printed, the org and the base URL its mock transport sees."""

TOKEN = "s3cr3t-token-never-printed"
ORG = "123"
BASE = "https://tracker.test/v3"

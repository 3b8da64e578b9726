"""The tracker as a service (`service.py`): issue streams and drains, entity specs with their
fingerprints, the target's maps (`target`, `transform`), plan, verify, checks, exports, and the
back-fill of form answers into issues."""

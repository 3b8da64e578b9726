"""Sharded runs: a migration cut into parts by a manifest (`manifest`), each run alone (`parts`)."""

"""Tests of haul's pipelines."""

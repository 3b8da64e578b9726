"""Tests of the command line, run as a user does: a subprocess, its exit status and output."""

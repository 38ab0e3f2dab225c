"""Tests of the replay engine (kvir.replay)."""

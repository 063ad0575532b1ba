"""Reliability suite (issue 8): bad inputs, truncations, properties, untouched inputs, atomic outputs, security."""

"""Judgement rules, one module per bottleneck family: facts in, a finding or nothing out."""

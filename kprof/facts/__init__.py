"""What the rules read, computed once: kernel facts (metric names, SOL on elapsed cycles, units, stalls)."""

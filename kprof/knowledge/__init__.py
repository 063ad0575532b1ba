"""Hardware and compiler knowledge kprof words its advice with, kept as data with its sources.

- :mod:`kprof.knowledge.instructions`: which SASS instruction the work needs per GPU architecture
  (sm_70 to sm_100) and data type, the source construct that emits it in CUDA C++, Triton and
  PyTorch, and when Triton's ``tl.dot`` falls back to FMA.
"""

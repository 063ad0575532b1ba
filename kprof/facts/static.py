"""What a binary's SASS says about one kernel when no performance counter can be read (``kprof profile sass``).

:class:`StaticKernel` holds the listing's summary (:func:`kprof.diagnose.sass.analyze_sass`) and the resources
``cuobjdump --dump-resource-usage`` gives. It says what the compiler emitted, never how often it ran: the rules that
read it (:func:`kprof.rules.kernel.local.static_local_memory`,
:func:`kprof.rules.kernel.matrix.static_no_tensor_cores`) give suspects, not verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass

from kprof.diagnose.sass import SassSummary
from kprof.model import Evidence, Subject, SubjectKind


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticKernel:
    """One kernel's static SASS facts."""

    name: str
    """The symbol (mangled for C++ kernels)."""
    sass: SassSummary
    registers: int | None = None
    stack_bytes: int | None = None
    binary: str | None = None
    """The binary it came from, for the headline; None when not known."""
    next_step: str = ""
    """The ncu capture that would settle it."""

    @property
    def subject(self) -> Subject:
        return Subject(kind=SubjectKind.KERNEL, name=self.name)

    @property
    def ffma_share(self) -> float:
        """FFMA among the listed instructions."""
        return self.sass.share(self.sass.ffma)

    @property
    def in_binary(self) -> str:
        """`` in <binary>`` for a headline, or ""."""
        return f" in {self.binary}" if self.binary else ""

    def evidence(self) -> tuple[Evidence, ...]:
        """What every static diagnosis quotes: (listing length, registers, MMA instructions, async copies, FFMA share)."""
        s = self.sass
        return (
            Evidence(
                name="SASS instructions (static)",
                value=int(s.instructions),
                reference="listing length, not executed count",
            ),
            Evidence(
                name="registers per thread", value=self.registers, reference="255 is the per-thread maximum"
            ),
            Evidence(
                name="tensor-core instructions (HMMA/HGMMA/IMMA)",
                value=int(s.mma),
                reference="present in SASS: matrix work reaches the tensor cores",
            ),
            Evidence(
                name="async copies (LDGSTS/UTMALDG)",
                value=int(s.async_copies),
                reference="cp.async / TMA emitted",
            ),
            Evidence(name="FFMA share of instructions", value=round(100 * self.ffma_share, 1), unit="%"),
        )

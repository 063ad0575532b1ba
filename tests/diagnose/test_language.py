"""The kernel's language (kprof/diagnose/language.py) and fixes written in it (kprof/diagnose/fixes.py).

The gallery's language of each kernel is its blind label (data/validation/*/labels.json, field ``language``).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

import kprof
from kprof.diagnose.fixes import shared_declaration, strided_access, thread_varying
from kprof.diagnose.kernel import diagnose_kernels, diagnose_launch
from kprof.diagnose.language import Language, kernel_origin
from kprof.kernel_model import KernelLaunch, SassLine
from kprof.model import Bottleneck, Verdict

B = Bottleneck
REPO = Path(__file__).resolve().parents[2]
NCU = REPO / "data" / "samples" / "ncu"
VALIDATION = REPO / "data" / "validation"
LABEL_LANGUAGE = {
    "cuda": Language.CUDA,
    "triton": Language.TRITON,
    "pytorch": Language.PYTORCH,
    "library": Language.LIBRARY,
}


def _entries() -> list[tuple[str, dict]]:
    out = []
    for group in ("cuda", "lib", "heldout"):
        p = VALIDATION / group / "labels.json"
        if p.exists():
            # kernel reports only: the held-out gallery also labels timelines (Kineto JSON), which have no kernel
            out += [
                (group, e)
                for e in json.loads(p.read_text())["entries"]
                if ".ncu-rep" in e["file"] or ".csv" in e["file"]
            ]
    return out


ENTRIES = _entries()


def _launch(group: str, e: dict) -> KernelLaunch:
    p = VALIDATION / group / e["file"]
    ks = [
        k
        for k in kprof.load(str(p))
        if re.search(e["subject"], k.display_name) or re.search(e["subject"], k.name)
    ]
    return ks[-1] if ks else kprof.load(str(p))[-1]


@pytest.mark.parametrize(("group", "entry"), ENTRIES, ids=[e["id"] for _, e in ENTRIES])
def test_language_matches_the_blind_label(group: str, entry: dict) -> None:
    assert kernel_origin(_launch(group, entry)).language is LABEL_LANGUAGE[entry["language"]]


# Words that belong to one language's fixes and make no sense in another's.
CUDA_ONLY = re.compile(
    r"threadIdx|__shared__|__shfl|__syncthreads|nvcuda::wmma|mma\.sync|-Xptxas|__launch_bounds__"
)
WRITES_KERNEL_CODE = re.compile(
    r"threadIdx|__shared__|__shfl|__syncthreads|nvcuda::wmma|-Xptxas|__launch_bounds__"
)
TRITON_WORDS = re.compile(r"\btl\.|BLOCK|num_warps|num_stages|input_precision|program")
PYTORCH_WORDS = re.compile(r"torch|PyTorch")


def _fix_speaks(lang: Language, fix: str, library: str | None) -> None:
    if lang is Language.TRITON:
        assert TRITON_WORDS.search(fix), fix
        assert not CUDA_ONLY.search(fix) and "cuBLAS/cuBLASLt or CUTLASS" not in fix, fix
    elif lang is Language.PYTORCH:
        assert PYTORCH_WORDS.search(fix), fix
        assert not CUDA_ONLY.search(fix) and not TRITON_WORDS.search(fix), fix
    elif lang is Language.LIBRARY:
        assert (library and library.split(" ")[0] in fix) or "call" in fix or "torch" in fix, fix
        # a library kernel's fix is about the call; naming the instruction it uses (mma.sync) is fine
        assert not WRITES_KERNEL_CODE.search(fix) and "rewrite" not in fix.lower(), fix
    else:
        assert not re.search(r"\btl\.|torch\.", fix), fix


def test_fix_text_differs_by_language_on_the_gallery() -> None:
    """Every gallery kernel kprof gives a fix or a healthy verdict gets a fix in its own language, and the four
    languages are all represented (the gallery holds CUDA C++, Triton, PyTorch and library kernels)."""
    seen: dict[Language, int] = {}
    for group, e in ENTRIES:
        k = _launch(group, e)
        d = diagnose_launch(k)
        if d.verdict is Verdict.INCONCLUSIVE or not d.fix:
            continue
        origin = kernel_origin(k)
        assert d.subject.language == origin.language.value
        _fix_speaks(origin.language, d.fix, origin.library)
        seen[origin.language] = seen.get(origin.language, 0) + 1
    assert {Language.CUDA, Language.TRITON, Language.PYTORCH, Language.LIBRARY} <= set(seen), seen


def test_names_choose_words_never_verdicts() -> None:
    """The same counters under a cuBLAS name and without source: same bottleneck, verdict, evidence and
    expectations; only the wording of the fix may change."""
    path = NCU / "long_kernel_one_line.ncu-rep.gz"
    k = kprof.load(str(path))[0]
    bare = replace(
        k,
        name="nvjet_sm90_tst_256x128",
        demangled_name="nvjet_sm90_tst_256x128",
        source_files={},
        sass=tuple(replace(s, file=None, line=None) for s in k.sass),
    )
    a, b = diagnose_launch(k), diagnose_launch(bare)
    assert kernel_origin(bare).library == "cuBLAS"
    assert (a.bottleneck, a.verdict, a.evidence, a.expect, a.headline) == (
        b.bottleneck,
        b.verdict,
        b.evidence,
        b.expect,
        b.headline,
    )
    assert a.fix != b.fix


def test_triton_ieee_dot_is_told_input_precision_not_cublas() -> None:
    (d,) = diagnose_kernels(kprof.load(str(NCU / "triton_fp32_ieee_dot.ncu-rep.gz")))
    assert d.bottleneck is B.NO_TENSOR_CORES
    assert 'input_precision="tf32"' in d.fix and "line 39" in d.fix and "HGMMA" in d.fix
    assert "cuBLAS" not in d.fix and "mma.sync" not in d.fix.replace("(mma.sync)", "")
    assert 'input_precision="ieee"' in d.mechanism


def test_cuda_sgemm_is_told_the_tensor_core_instruction_for_this_gpu() -> None:
    (d,) = diagnose_kernels(kprof.load(str(NCU / "no_tensor_cores.ncu-rep.gz")))
    assert d.bottleneck is B.NO_TENSOR_CORES
    assert "line 17" in d.fix and "wmma::precision::tf32" in d.fix and "`As`/`Bs`" in d.fix
    assert "HGMMA" in d.fix and "cublasGemmEx" in d.fix  # sm_90: the warpgroup path and the library call
    assert "HGMMA.64xNx8.F32.TF32" in d.mechanism


def test_pytorch_fp32_matmul_is_told_the_tf32_flag() -> None:
    """A PyTorch/cuBLAS FFMA SGEMM (no source) is told the call-site switch, not a kernel rewrite."""
    k = kprof.load(str(NCU / "no_tensor_cores.ncu-rep.gz"))[0]
    sgemm = replace(
        k,
        name="ampere_sgemm_128x64_nn",
        demangled_name="ampere_sgemm_128x64_nn",
        source_files={},
        sass=tuple(replace(s, file=None, line=None) for s in k.sass),
    )
    d = diagnose_launch(sgemm)
    assert d.bottleneck is B.NO_TENSOR_CORES
    assert "allow_tf32" in d.fix and "CUBLAS_TF32_TENSOR_OP_MATH" in d.fix
    assert not CUDA_ONLY.search(d.fix)


def test_uncoalesced_cuda_fix_names_the_index_to_swap() -> None:
    (d,) = diagnose_kernels(kprof.load(str(NCU / "long_kernel_one_line.ncu-rep.gz")))
    assert "`col` follows threadIdx.x and is multiplied by `rows`" in d.mechanism
    assert "Make `col` the unit-stride index of `pos_t` on line 22" in d.fix


def test_bank_conflict_fix_pads_the_declared_array() -> None:
    (d,) = diagnose_kernels(kprof.load(str(NCU / "shared_bank_conflicts.ncu-rep.gz")))
    assert "`__shared__ float tile[32][33];`" in d.fix and "line 19" in d.fix


def test_float_atomics_are_never_told_reduce_add_sync() -> None:
    (d,) = diagnose_kernels(kprof.load(str(NCU / "atomic_contention.ncu-rep.gz")))
    assert d.bottleneck is B.ATOMIC_CONTENTION
    assert "__reduce_add_sync" not in d.fix  # integer-only intrinsic; this atomic is REDG.E.ADD.F32
    assert "o >= 4" in d.fix and "lanes 0-3" in d.fix  # sums[i & 3]: four bins per warp


def test_divergence_fix_rewrites_the_condition() -> None:
    (d,) = diagnose_kernels(kprof.load(str(NCU / "warp_divergence.ncu-rep.gz")))
    assert "`switch ((threadIdx.x / 32) % 8)`" in d.fix


def test_data_dependent_local_index_is_not_told_to_unroll() -> None:
    (d,) = diagnose_kernels(kprof.load(str(NCU / "local_memory_spill.ncu-rep.gz")))
    assert "compile-time" not in d.fix and "unroll" not in d.fix
    assert "table_s[j][threadIdx.x]" in d.fix and "64 KB per block" in d.fix


# ------------------------------------------------------------------------------------ source reading
def test_thread_varying_ignores_comments_members_and_warp_indices() -> None:
    src = """// stride is 32 floats (a comment that mentions threadIdx.x)
    const int row = blockIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int y = blockIdx.y * 32 + threadIdx.y;"""
    assert thread_varying(src) == {"col", "lane"}


def test_strided_access_two_dimensional() -> None:
    a = strided_access("acc += tile[lane][c];", {"lane"})
    assert a is not None and (a.array, a.var, a.stride) == ("tile", "lane", "the row length")
    assert strided_access("x = tile[c][lane];", {"lane"}) is None


def test_shared_declaration_lookup() -> None:
    src = "__shared__ float As[TS][TS];\n__shared__ float xs[8][32];\n"
    assert shared_declaration(src, "acc += As[ty][k];") == ("float", "As", ["TS", "TS"])
    assert shared_declaration(src, "y = other[k];") is None


def test_kernel_without_anything_is_unknown_and_gets_cuda_wording() -> None:
    k = KernelLaunch(id=0, name="my_kernel", sass=(SassLine(pc=0, text="FFMA R1, R2, R3, R4"),))
    assert kernel_origin(k).language is Language.UNKNOWN


@pytest.mark.parametrize(
    ("display", "language"),
    [
        # ATen kernels as a CSV export names them (namespace dropped): the family or ATen's argument types tell
        (
            "void tensor_kernel_scan_innermost_dim<float, plus<float>>(T1 *, const T1 *, unsigned int)",
            "pytorch",
        ),
        (
            "void radixSortKVInPlace<2, (int)-1, 32, 32, float, long, unsigned int>(TensorInfo<T5, T7>, T7)",
            "pytorch",
        ),
        (
            "void gatherTopK<float, unsigned int, 2>(at::cuda::detail::TensorInfo<const float, unsigned int>)",
            "pytorch",
        ),
        # a mangled name in ATen's namespace
        ("_ZN2at6native13reduce_kernelILi512ELi1EEEvT1_", "pytorch"),
        # user kernels with scan/sort in their names stay unknown: the name alone is not ATen's family
        ("void my_scan_kernel<float>(float *, const float *, int)", "unknown"),
        ("void radix_sort_pass(unsigned int *, int)", "unknown"),
        ("void tensor_info_update(float *, int)", "unknown"),
    ],
)
def test_pytorch_kernels_without_namespace_are_pytorch(display: str, language: str) -> None:
    name = display.split("(")[0].split("<")[0].replace("void ", "")
    k = KernelLaunch(id=0, name=name, demangled_name=display)
    assert kernel_origin(k).language.value == language

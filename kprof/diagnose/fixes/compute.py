"""Fixes in the kernel's language for compute mechanisms: tensor cores, divergence, instruction overhead."""

from __future__ import annotations

import re

from kprof.diagnose.fixes.context import Context, L, Text, keep_with_line, pct, where_sentence
from kprof.diagnose.fixes.source import SHARED_DECL, clip, strip_comments
from kprof.facts.sass_traits import Fp64Promotion
from kprof.knowledge import instructions as ki
from kprof.model import Verdict


def divergence(c: Context) -> Text:
    """Where the warps split, and a warp-uniform branch in the kernel's language."""
    w = c.top
    mech = ""
    if w is not None and w.line is not None:
        mech = (
            f"{c.line_ref()[0].upper()}{c.line_ref()[1:]} is where the warps split"
            + (f" ({w.detail})" if w.detail else "")
            + f"; {pct(w.share)} of the idle lane slots are in the paths after it."
        )
    if c.is_cuda:
        cond = re.search(r"\b(if|switch|while)\s*\((.*)\)", w.text) if w else None
        if w and cond and "threadIdx.x" in cond.group(2):
            uniform = cond.group(2).replace("threadIdx.x", "(threadIdx.x / 32)")
            return mech, (
                f"Branch on the warp, not the lane: on line {w.line} write `{cond.group(1)} ({uniform})` instead of "
                f"`{cond.group(1)} ({cond.group(2)})`, and hand each warp the 32 elements of its path (index the data by "
                "warp and lane accordingly), so all 32 lanes of a warp take the same path and no lane slot idles."
            )
        if w and w.line is not None:
            return mech, (
                f"The condition on line {w.line} differs between lanes of a warp: group the elements by path before "
                "this kernel (sort or bin them by the condition) so each warp sees one path, or make short paths "
                "branch-free (compute both and select)."
            )
        return mech, None
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "Triton programs do not branch per lane: idle lanes come from masks (a BLOCK much larger than the valid "
            "`offs < n`, or tl.where evaluating both sides). Size BLOCK to the data so few lanes are masked off."
        )
    return mech, (
        f"The divergence is inside {c.origin.library or 'PyTorch'}'s kernel for these inputs: it depends on the "
        "values and shapes passed, not on code you can edit."
    )


def _fma_dtype(c: Context) -> str:
    """The data type of the FMAs on the responsible lines (``fp32`` when unknown)."""
    for w in c.where:
        dt = ki.fma_dtype(w.instruction) if w.instruction else None
        if dt:
            return dt
    return "fp32"


_DTYPE_WORDS = {"fp32": "FP32", "fp64": "FP64", "fp16": "FP16", "bf16": "BF16", "tf32": "TF32"}


def no_tensor_cores(c: Context) -> Text:
    """The tensor-core path this GPU has for the FMAs' data type, written for the kernel's language."""
    dt = _fma_dtype(c)
    path = ki.matrix_path(c.sm, dt, c.k.device)
    a = ki.arch(c.sm)
    mech = where_sentence(c, "FP arithmetic")
    if path is not None and a is not None:
        mech += f" On sm_{c.sm} ({a.name}) the tensor cores do this product as {path.sass}; none was issued."
    if path is None:
        if a is None:
            return mech, None  # the architecture is unknown: keep the generic advice
        fix = (
            f"This GPU has no tensor-core path for {_DTYPE_WORDS.get(dt, dt)} products: raise FMA density instead "
            "(register tiling: each thread computes a block of outputs from operands held in registers)."
        )
        return mech, fix
    if c.is_cuda:
        return mech, _ntc_cuda(c, dt, path)
    if c.lang in (L.TRITON, L.INDUCTOR):
        return _ntc_triton(c, dt, mech)
    return mech, _ntc_library(c, path)


def _ntc_cuda(c: Context, dt: str, path: ki.MatrixPath) -> str:
    """CUDA C++: a WMMA tile product (and the GPU's faster path), or cuBLAS."""
    ref = c.line_ref(text=False) or "the inner product"
    inputs = (
        "TF32 inputs (FP32 range, 10-bit mantissa)" if dt == "fp32" else f"{_DTYPE_WORDS.get(dt, dt)} inputs"
    )
    wmma = {
        "fp32": "16x16x8 `wmma::precision::tf32` fragments",
        "fp64": "8x8x4 `double` fragments",
        "fp16": "16x16x16 `half` fragments",
        "bf16": "16x16x16 `__nv_bfloat16` fragments",
    }.get(dt)
    shared = [m.group(2) for m in SHARED_DECL.finditer(strip_comments(c.source))]
    src = f" from `{'`/`'.join(shared[:2])}`" if shared else " from shared-memory tiles"
    cublas = {
        "fp32": "cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32",
        "fp64": "cublasDgemm",
        "fp16": "cublasGemmEx with CUDA_R_16F",
        "bf16": "cublasGemmEx with CUDA_R_16BF",
    }.get(dt, "cublasGemmEx")
    acc = "FP64" if dt == "fp64" else "FP32"
    base = ki.matrix_path(min(c.sm or 80, 89), dt, c.k.device) if wmma else None
    if wmma and base is not None:
        fix = (
            f"Replace the FMA loop on {ref} with a tensor-core tile product: nvcuda::wmma with {wmma} loaded{src} "
            f"(`load_matrix_sync`, `mma_sync`, `store_matrix_sync`; SASS {base.sass}): {inputs}, {acc} "
            "accumulation. "
        )
        if path.sass.split(" ")[0] != base.sass:
            fix += (
                f"For this GPU's full tensor rate use {path.ptx.split(' (')[0]} (SASS {path.sass}) through "
                f"{path.cuda}. "
            )
        fix += f"Or call cuBLAS ({cublas}). "
    else:
        fix = (
            f"Move the product on {ref} to the tensor cores with {inputs}: {path.cuda} ({path.ptx}, SASS "
            f"{path.sass}), or call cuBLAS ({cublas}). "
        )
    if dt == "fp32":
        fix += "If exact FP32 products are required, keep FFMA and raise FMA density with register tiling instead."
    return fix.strip()


def _ntc_triton(c: Context, dt: str, mech: str) -> Text:
    """Triton: tl.dot's input precision (exact FP32 was asked for), block sizes of at least 16."""
    text = c.top.text if c.top else ""
    prec = ki.triton_input_precision(text)
    warps = (c.k.threads_per_block or 0) // 32 or None
    target = ki.triton_dot(c.sm, "fp32", input_precision="tf32", num_warps=warps)
    emits = "MMA instructions"
    if target is not None:
        emits = f"{target.sass} ({'wgmma' if target.sass.endswith('GMMA') else 'mma.sync'})"
        if target.sass == "HGMMA":
            emits += " on sm_90 (BLOCK_M a multiple of 64, num_warps a multiple of 4" + (
                f"; this launch has num_warps={warps})" if warps else ")"
            )
    ref = c.line_ref(text=False) or "the tl.dot"
    if dt == "fp32" and prec == "ieee":
        if "input_precision" in text:
            mech += (
                ' `input_precision="ieee"` asks Triton for exact FP32 products, which it computes with FFMA.'
            )
        else:
            mech += " `allow_tf32=False` asks Triton for exact FP32 products, which it computes with FFMA."
        fix = (
            f'On {ref}, pass `input_precision="tf32"` (Triton\'s default on NVIDIA GPUs: inputs rounded to a '
            f"10-bit mantissa, FP32 accumulation) and Triton emits {emits}; "
            '`"tf32x3"` gets close to FP32 accuracy for three times the tensor-core work. Or load the operands as '
            'bf16 if that precision is acceptable. Keep `"ieee"` only if exact FP32 products are a requirement: '
            "then the FP32 pipe is the roof."
        )
        return mech, fix
    fix = (
        f"On {ref}, tl.dot ran on FMA: with FP32 operands that means exact FP32 was requested "
        '(`input_precision="ieee"`, `allow_tf32=False` or TRITON_F32_DEFAULT=ieee); pass `input_precision="tf32"` '
        f"so Triton emits {emits}, or load bf16/fp16 operands. A dot with a block dimension below 16 does not compile "
        "to MMA either: keep BLOCK_M, BLOCK_N, BLOCK_K >= 16."
    )
    return mech, fix


def _ntc_library(c: Context, path: ki.MatrixPath) -> str | None:
    """PyTorch or cuBLAS/cuDNN: the TF32 flag or bf16 autocast; None for another library (keep the generic fix)."""
    lib = c.origin.library or ""
    if c.lang is L.PYTORCH or lib in ("cuBLAS", "cuDNN", ""):
        conv = "cuDNN" in lib or re.search(r"conv|fprop|dgrad|wgrad", c.k.display_name, re.I)
        flag = (
            "`torch.backends.cudnn.allow_tf32 = True` (the default for convolutions)"
            if conv
            else '`torch.backends.cuda.matmul.allow_tf32 = True` (or `torch.set_float32_matmul_precision("high")`)'
        )
        return (
            f"TF32 is off for this FP32 {'convolution' if conv else 'matrix product'}, so "
            f"{lib or 'PyTorch'} ran an FFMA kernel: set {flag}, or run the op in bf16 under "
            '`torch.autocast("cuda", dtype=torch.bfloat16)`; the library then picks a tensor-core kernel '
            f"({path.sass.split(' ')[0]}). Outside PyTorch: cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH). "
            "Keep FP32 only if exact FP32 products are required."
        )
    return None


def tensor_core(c: Context) -> Text:
    """The faster MMA path (wgmma/TMA on Hopper) or how to feed the tensor cores, for the kernel's language."""
    if c.d.verdict is not Verdict.FIX:
        return "", None
    if c.top is None:
        return "", _slower_path_call(c)
    ins = c.top.instruction
    best = ki.is_best_mma(ins, c.sm)
    m = ki.parse_mma(ins)
    mech = where_sentence(c, "MMA instructions")
    if best is False and m is not None:
        path = ki.matrix_path(c.sm, m.dtype, c.k.device)
        if path is None:
            return mech, None
        mech += f" {ins} is mma.sync; on sm_{c.sm} the warpgroup path ({path.sass}) has the higher peak."
        if c.is_cuda:
            return mech, (
                f"Issue the product on {c.line_ref(text=False) or 'the MMA line'} with {path.ptx.split(' (')[0]} "
                f"instead of mma.sync ({path.cuda}; operands in shared memory, loaded by TMA; SASS {path.sass}), "
                "or call cuBLAS/cuBLASLt for a plain GEMM."
            )
        if c.lang in (L.TRITON, L.INDUCTOR):
            return mech, (
                "Triton fell back from wgmma to mma.sync: use num_warps=4 or 8 and BLOCK_M a multiple of 64, "
                "and a 2-D (not batched 3-D) tl.dot, so it emits HGMMA."
            )
        if c.lang in (L.LIBRARY, L.PYTORCH) and "Flash" not in (c.origin.library or ""):
            return mech, _library_on_mma_sync(c, m.dtype)
    if c.lang in (L.TRITON, L.INDUCTOR):
        ops = {x.mnemonic for x in c.k.sass}
        if (c.sm or 0) >= 90 and "LDGSTS" in ops and "UTMALDG" not in ops:
            return mech, (
                "The operand tiles arrive by cp.async (LDGSTS), not TMA: on sm_90 load them through tensor "
                "descriptors (`tl.make_tensor_descriptor(...)` and `desc.load([off_m, off_k])`) so TMA (UTMALDG) "
                "fetches whole tiles without occupying the warps, and make the kernel persistent (grid = number of SMs, "
                "a tl.range loop over tiles) to overlap one tile's epilogue with the next tile's loads."
            )
        return mech, (
            "Keep the tensor cores fed: tiles of at least 128x128x64, num_stages=3-4 and num_warps=8, and a "
            "persistent kernel (grid = number of SMs) that overlaps one tile's epilogue with the next tile's loads."
        )
    if c.lang is L.LIBRARY and "Flash" in (c.origin.library or ""):
        return mech, (
            "This is SDPA's FlashAttention-2 kernel (mma.sync based): on Hopper try the cuDNN backend "
            "(`with torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION):`), which uses wgmma/TMA"
            + flash_shape_advice(c)
        )
    return mech, None


_PATH_METRIC = re.compile(r"sm__ops_path_tensor_op_(hmma|imma)_src_([a-z0-9]+)")
_PATH_DTYPE = {"int8": "int8", "bf16": "bf16", "fp16": "fp16", "tf32": "tf32", "fp8": "fp8"}


def _slower_path_call(c: Context) -> str | None:
    """A library kernel on the mma.sync path where the GPU has warpgroup MMA (no SASS: told from the path metric
    the evidence names): what the call can change."""
    m = next((m for e in c.d.evidence if e.metric and (m := _PATH_METRIC.search(e.metric))), None)
    if m is None or c.lang not in (L.LIBRARY, L.PYTORCH):
        return None
    dtype = _PATH_DTYPE.get(m.group(2))
    return _library_on_mma_sync(c, dtype) if dtype else None


def _library_on_mma_sync(c: Context, dtype: str) -> str | None:
    """A library kernel issuing mma.sync where the GPU has a faster (warpgroup) path for ``dtype``: the call."""
    path = ki.matrix_path(c.sm, dtype, c.k.device)
    if path is None or path.sass.startswith(("HMMA", "IMMA")):
        return None
    lib = c.origin.library or "The library"
    if dtype == "int8":
        return (
            f"This call runs {lib}'s mma.sync INT8 kernel (IMMA, an sm_80 design); on sm_{c.sm} INT8 "
            f"products run fastest as {path.sass.split('.')[0]} (wgmma). The kernel cannot be edited: get one "
            "built for sm_90 instead: an INT8 GEMM written with Triton's tl.dot on int8 operands (it emits IGMMA "
            "on sm_90) or a CUTLASS 3.x sm90 kernel; or, where the accuracy allows, FP8 e4m3 through "
            "torch._scaled_mm (QGMMA); a newer cuBLAS/PyTorch may also ship an sm_90 INT8 kernel for this shape."
        )
    return (
        f"This call runs {lib}'s mma.sync kernel (HMMA, an sm_80 design); on sm_{c.sm} the warpgroup path "
        f"({path.sass.split('.')[0]}) has the higher peak: keep the operands contiguous with sizes that are "
        "multiples of 16 and 16-byte aligned, so the library's heuristics can pick its sm_90 kernels, or "
        "update the library."
    )


_FLASH_HEAD_DIM = re.compile(r"Flash_(?:fwd|bwd)_kernel_traits<\(int\)(\d+)")


def flash_shape_advice(c: Context) -> str:
    """The shape advice for a FlashAttention launch, only where it can apply: head_dim a multiple of 64 when the
    kernel's template says it is not (``Flash_fwd_kernel_traits<(int)kHeadDim, ...>``), more heads or sequences per
    call when the grid does not fill the GPU. Ends the sentence."""
    out = []
    m = _FLASH_HEAD_DIM.search(c.k.display_name)
    if m is None or int(m.group(1)) % 64:
        out.append("keep head_dim a multiple of 64 with bf16/fp16 inputs")
    sms = c.k.device_attributes.get("multiprocessor_count")
    if c.k.blocks is not None and isinstance(sms, int | float) and c.k.blocks < 2 * sms:
        out.append("batch more heads or sequences per call (the grid does not fill the GPU twice over)")
    return (", and " + ", and ".join(out) + ".") if out else "."


_RUNTIME_DIV = re.compile(r"[%/]=?\s*\(?\s*([A-Za-z_]\w*)\b(?!\s*\()")


def instructions(c: Context) -> Text:
    """Run-time divisions and index math on the responsible line, and how to take them out."""
    mech = where_sentence(c, "overhead instructions")
    w = c.top
    if c.is_cuda and w is not None and w.text:
        divisors = [d for d in _RUNTIME_DIV.findall(strip_comments(w.text)) if not d.isupper()]
        ops = {x.opcode for x in c.k.sass}
        if divisors and any(o.startswith("MUFU.RCP") for o in ops) and any(o.startswith("I2F") for o in ops):
            names = ", ".join(f"`{d}`" for d in dict.fromkeys(divisors))
            mech += (
                f" Line {w.line} divides by {names}, known only at run time: each 32-bit integer division or modulo "
                "compiles to a sequence of about 20 instructions (I2F, MUFU.RCP, F2I and IMAD fix-ups) per element."
            )
            return mech, (
                f"Take the run-time divisions out of line {w.line} and its neighbours: precompute, on the host, a "
                "multiply-shift pair per divisor (division by invariant integers, as CUTLASS's FastDivmod does) and pass "
                "those instead, so each `/` and `%` becomes one IMAD.HI and a shift; or, where the sizes are fixed, make "
                "them template/constexpr parameters (powers of two become shifts and masks). Collapsing contiguous "
                "dimensions first removes divisions altogether."
            )
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "Index arithmetic dominates: make strides and sizes tl.constexpr where they are fixed, use larger BLOCKs "
            "so the offsets are computed once per many elements, and prefer block pointers/tensor descriptors."
        )
    if c.lang is L.PYTORCH and _STRIDED_ELEMENTWISE.search(c.k.name):
        return mech, (
            "PyTorch computes an offset per dimension per element for this non-contiguous, many-dimensional input: "
            "make the input contiguous once (or merge dimensions with view/flatten), or let torch.compile generate "
            "the indexing."
        )
    if c.lang is L.PYTORCH and _DEPTHWISE_NCHW.search(c.k.name):
        return mech, (
            "PyTorch runs this depthwise convolution with its own generic kernel for NCHW tensors "
            "(conv_depthwise2d: index math per output element); in channels_last memory format cuDNN's NHWC "
            "depthwise kernels run instead: `model = model.to(memory_format=torch.channels_last)` and "
            "`x = x.to(memory_format=torch.channels_last)` (keep the activations channels_last end to end so no "
            "transposes are added), or torch.compile the block."
        )
    if c.lang is L.PYTORCH:
        fused = (
            "; fused library kernels exist for normalisations and activations"
            if _NORM_OR_ACTIVATION.search(c.k.name)
            else ""
        )
        return mech, (
            "This PyTorch kernel spends its issue slots on per-element overhead (conversions, index math, per-element "
            "divisions or running updates) rather than on the loads and the math the op needs: use a fused "
            "implementation that does fewer instructions per element (torch.compile generates one for the op and "
            f"its neighbours{fused})."
        )
    return mech, keep_with_line(c)


_DEPTHWISE_NCHW = re.compile(r"conv_depthwise[23]d", re.IGNORECASE)
"""ATen's own depthwise convolution kernels (used for NCHW inputs; channels_last inputs go to cuDNN)."""

_NORM_OR_ACTIVATION = re.compile(r"norm|softmax|gelu|silu|relu|sigmoid|tanh|activation", re.IGNORECASE)
"""Kernel names of the ops that fused library kernels cover (normalisations, activations): wording only."""


_FP64_CALL = re.compile(
    r"\b(exp|exp2|expm1|log|log1p|log2|log10|tanh|sinh|cosh|sin|cos|tan|sqrt|rsqrt|pow|erf|erfc|atan|atan2|"
    r"asin|acos|cbrt|fabs|fmin|fmax|hypot)\s*\("
)
_DOUBLE_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w.])")


def _as_float(text: str) -> str:
    """A CUDA C++ line with its FP64 spelled in FP32: ``double`` -> ``float``, ``1.0`` -> ``1.0f``, ``exp(`` ->
    ``expf(``."""
    out = re.sub(r"\bdouble\b", "float", text)
    out = _DOUBLE_LITERAL.sub(lambda m: m.group(0) + "f", out)
    return _FP64_CALL.sub(lambda m: f"{m.group(1)}f(", out)


def fp64_promotion(c: Context, p: Fp64Promotion) -> Text:
    """FP32 data computed in FP64: the declarations and calls that promote it, and their FP32 spelling."""
    mech = where_sentence(c, "executed FP64 instructions")
    if c.is_cuda:
        src = strip_comments(c.source).splitlines()
        math_lines = {ln for f, ln in p.lines if c.top is None or f == c.top.file}
        changes: list[tuple[int, str, str]] = []
        for i, text in enumerate(src, start=1):
            t = text.strip()
            if not t or t.startswith("extern") or "__global__" in t:
                continue
            if re.search(r"\bdouble\b", t) or (i in math_lines and _FP64_CALL.search(t)):
                new = _as_float(t)
                if new != t:
                    changes.append((i, t, new))
        if changes:
            # the FP64 library routines show as their MUFU.*64H seeds; without them the FP64 work is plain arithmetic
            routines = any(op.startswith("MUFU") for op, _ in p.ops)
            shown = changes[:3]
            edits = "; ".join(f"line {i}: `{clip(new)}` instead of `{clip(old)}`" for i, old, new in shown)
            return mech, (
                f"Keep the arithmetic in FP32: {edits}"
                + (f" (and {len(changes) - 3} more)" if len(changes) > 3 else "")
                + (
                    ". Then nvcc emits the FP32 routines (FFMA polynomials, MUFU.EX2/LG2) and no F2F conversion; "
                    "`-use_fast_math` (or `__expf`, `__logf`) shortens them further where the accuracy allows."
                    if routines
                    else ". Then the arithmetic runs as FP32 instructions and no F2F conversion executes."
                )
                + " Keep a double only where FP64 is deliberate (a long running sum's accumulator)."
            )
        return mech, (
            "Keep the arithmetic in FP32: float constants (`1.0f`) and variables, and the FP32 functions (`expf`, "
            "`log1pf`, `tanhf`) instead of the double ones; `-use_fast_math` shortens them further where the "
            "accuracy allows."
        )
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "The tensors are float32 but the math runs in float64: a `.to(tl.float64)` or a float64 tensor in the "
            "expression promotes it; compute in tl.float32 (cast once, or keep every operand float32)."
        )
    if c.lang is L.PYTORCH:
        return mech, (
            "A float64 tensor or Python-float tensor created as double promotes this op: create the operands as "
            "float32 (`dtype=torch.float32`), or cast the float64 one once before the op."
        )
    return mech, None


_STRIDED_ELEMENTWISE = re.compile(r"(?<!vectorized_)elementwise_kernel")
"""PyTorch's TensorIterator kernels that index through an OffsetCalculator (one offset per dimension per element);
``vectorized_elementwise_kernel`` runs only on contiguous inputs."""

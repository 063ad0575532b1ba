"""Names in a timeline: CUDA API calls classified by what they do (:class:`ApiCategory`), and kernel
names shortened to the function name that ``ncu -k`` matches."""

from __future__ import annotations

import enum
import re


class ApiCategory(enum.IntEnum):
    """What a host-side CUDA API call does, as far as GPU idle time is concerned."""

    OTHER = 0
    LAUNCH = 1
    """Enqueues a kernel or a graph (``cudaLaunchKernel``, ``cuLaunchKernelEx``, ``cudaGraphLaunch``)."""
    SYNC = 2
    """Blocks the host until the GPU is done (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
    ``cudaEventSynchronize``)."""
    COPY_SYNC = 3
    """A synchronous copy (``cudaMemcpy``, ``cuMemcpyDtoH``): blocks the host as a sync does."""
    COPY_ASYNC = 4
    """An asynchronous copy call (``cudaMemcpyAsync``); blocks anyway from pageable memory."""
    MEMSET = 5
    STARTUP = 6
    """One-time work: module or library loading, context creation, device queries."""
    ALLOC = 7
    """Allocation and freeing (``cudaMalloc``, ``cudaFree``, ``cudaHostAlloc``, ...)."""


_VERSION_SUFFIX = re.compile(r"_v\d+$")

_PTDS_SUFFIX = re.compile(r"_(ptsz|ptds)$")


def api_base_name(name: str) -> str:
    """The API name without nsys's version suffix: ``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``.

    Examples
    --------
    >>> api_base_name("cudaLaunchKernel_v7000")
    'cudaLaunchKernel'
    >>> api_base_name("cuMemcpyDtoHAsync_v2")
    'cuMemcpyDtoHAsync'
    """
    n = _VERSION_SUFFIX.sub("", name.strip())
    return _PTDS_SUFFIX.sub("", n)


def classify_api(name: str) -> ApiCategory:
    """The :class:`ApiCategory` of a CUDA runtime or driver API name (version suffixes ignored).

    Examples
    --------
    >>> classify_api("cuLaunchKernelEx").name
    'LAUNCH'
    >>> classify_api("cudaStreamSynchronize_v3020").name
    'SYNC'
    >>> classify_api("cudaMemcpy_v3020").name
    'COPY_SYNC'
    """
    n = api_base_name(name)
    low = n.lower()
    if "synchronize" in low and "query" not in low:
        return ApiCategory.SYNC
    if "launch" in low and (
        "kernel" in low or "graph" in low or "cooperative" in low or low.startswith("culaunch")
    ):
        return ApiCategory.LAUNCH
    if low.startswith(("cudamemset", "cumemset")):
        return ApiCategory.MEMSET
    if low.startswith(("cudamemcpy", "cumemcpy")):
        return ApiCategory.COPY_ASYNC if "async" in low else ApiCategory.COPY_SYNC
    if low.startswith(
        (
            "cudamalloc",
            "cudafree",
            "cumemalloc",
            "cumemfree",
            "cudahostalloc",
            "cumemhostalloc",
            "cudahostregister",
            "cumemhostregister",
            "cudahostunregister",
            "cumemhostunregister",
            "cudamallochost",
            "cudafreehost",
            "cumemallochost",
            "cumemfreehost",
            "cumemcreate",
            "cumemmap",
            "cumemunmap",
            "cumemrelease",
            "cumemaddressreserve",
            "cumemaddressfree",
        )
    ):
        return ApiCategory.ALLOC
    if low.startswith(
        (
            "culibraryload",
            "cumoduleload",
            "culinkcreate",
            "culinkadd",
            "culinkcomplete",
            "cuinit",
            "cuctxcreate",
            "cudeviceprimaryctxretain",
            "cudevicegetcount",
            "cudagetdevicecount",
            "cudagetdeviceproperties",
            "cudevicegetattribute",
            "cudadevicegetattribute",
            "culibrarygetmodule",
            "culibrarygetkernel",
            "cumodulegetfunction",
            "culibrarygetunifiedfunction",
            "cudafuncgetattributes",
            "cufuncgetattribute",
            "cugetproctaddress",
            "cudagetdriverentrypoint",
            "cumodulegetloadingmode",
            "cudastreamcreate",
            "custreamcreate",
            "cudaeventcreate",
            "cueventcreate",
            "cudagraphinstantiate",
            "cugraphinstantiate",
        )
    ) or low in ("cudasetdevice", "cudafree0"):
        return ApiCategory.STARTUP
    return ApiCategory.OTHER


def _strip_balanced_suffix(s: str, open_c: str, close_c: str) -> str:
    """Remove one trailing balanced ``open_c ... close_c`` group (e.g. a parameter list)."""
    s = s.rstrip()
    if not s.endswith(close_c):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if c == close_c:
            depth += 1
        elif c == open_c:
            depth -= 1
            if depth == 0:
                return s[:i].rstrip()
    return s


def _split_top(s: str, sep: str) -> list[str]:
    """Split ``s`` on ``sep`` outside <>, () and [] groups."""
    out: list[str] = []
    depth = 0
    cur = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth = max(0, depth - 1)
        elif depth == 0 and s.startswith(sep, i):
            out.append(s[cur:i])
            i += len(sep)
            cur = i
            continue
        i += 1
    out.append(s[cur:])
    return out


def short_kernel_name(name: str) -> str:
    """The base function name of a demangled kernel name (what nsys calls ``shortName``).

    Examples
    --------
    >>> short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
    ...                   "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)")
    'vectorized_elementwise_kernel'
    >>> short_kernel_name("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN")
    'nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN'
    >>> short_kernel_name("void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false>(float*, int)")
    'softmax_warp_forward'
    """
    s = name.strip()
    if not s:
        return s
    # the parameter list, then trailing qualifiers like " const"
    s = _strip_balanced_suffix(s, "(", ")")
    s = _strip_balanced_suffix(s, "<", ">")
    # the last :: component outside templates
    parts = _split_top(s, "::")
    last = parts[-1].strip()
    # return type and other leading words ("void foo")
    words = _split_top(last, " ")
    last = words[-1].strip() if words else last
    last = _strip_balanced_suffix(last, "<", ">")
    return last or name.strip()

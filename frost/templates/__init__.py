"""frost.templates: CuTe DSL kernels that take every structural decision from a Plan.

The SDPA backward chain (:mod:`frost.templates.chain` launches them in this order, PDL-linked):

* :mod:`frost.templates.rowdot`     delta = rowsum(dO * O), lse_log2, zeroes the dQ workspace;
* :mod:`frost.templates.bwd_main`   the KV-stationary fused backward (dK, dV, dQ partials);
* :mod:`frost.templates.dq_convert` dQ = scale * sum of the fp32 partials, cast to the io dtype.

The second program, :func:`frost.ir.examples.gemm_rowsum_program`, has its own kernels in
:mod:`frost.templates.gemm_rowsum` (zero r, then C = A·Bᵀ with r = rowsum(C) fused; split over
K, a third casts C from its fp32 workspace), read from its plan the same way, and run by
:mod:`frost.templates.gemm_rowsum_run`; :mod:`frost.templates.gemm` is the tiny TMA GEMM that
builds its own.

Modules are imported on demand (importing them pulls in CuTe DSL).
"""

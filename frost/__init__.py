"""frost: a tile-DSL research framework on NVIDIA CuTe DSL for SM120/SM121.

Layers (imports flow one way, left to right is "may be imported by"):

    tile_dsl  <-  ir  <-  sched  <-  templates  <-  sdpa

* ``frost.tile_dsl``  primitives (swizzle, MMA fragments, copies, barriers), each with a
  pure-Python model beside its CuTe DSL device form.
* ``frost.ir``        a small IR of Load / Gemm / Pointwise / RowReduce / ... stages in a DAG.
* ``frost.sched``     turns a program + arch + tile choice into a Plan (kernels, warp roles,
  shared-memory map, barriers, PDL edges).
* ``frost.templates`` CuTe DSL kernels that take every structural decision from a Plan.
* ``frost.sdpa``      the user API: the fused scaled-dot-product-attention backward.
"""

__version__ = "0.1.0"

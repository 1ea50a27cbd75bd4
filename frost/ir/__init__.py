"""frost.ir: the stage IR.

A program is a DAG of stages (:mod:`frost.ir.stages`) over symbolic tensors
(:mod:`frost.ir.tensor`, :mod:`frost.ir.symbols`), each at a loop level (PROLOGUE / BODY /
EPILOGUE) of the CTA's loop (:mod:`frost.ir.program`). :mod:`frost.ir.analysis` counts FLOPs
and bytes symbolically. Programs: :mod:`frost.ir.attention` (SDPA backward and forward) and
:mod:`frost.ir.examples` (GEMM with a fused row-sum).
"""

from frost.ir.program import Program
from frost.ir.stages import (Accumulate, AtomicReduce, Cast, Gemm, Load, Pointwise, RowReduce,
                             Stage, Store)
from frost.ir.symbols import DType, Level
from frost.ir.tensor import Space, Tensor, global_, tile

__all__ = ["Program", "Stage", "Load", "Gemm", "Pointwise", "RowReduce", "Accumulate",
           "AtomicReduce", "Cast", "Store", "DType", "Level", "Space", "Tensor", "tile", "global_"]

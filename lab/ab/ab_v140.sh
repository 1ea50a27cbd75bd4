#!/usr/bin/env bash
# v140 (lab/LOG.md): serial_sdp=1 at d=256 (2,8,4096), never timed there (v19 timed it at
# d=96/128, v130 at d=64). v139 put dP's GEMM at 17 % of d=256's trip; serially, P's exponentials
# may overlap dP's MMAs and S's fp32 accumulators are dead while dP runs. Every variant compiles
# spill-free on sm_90a and sm_120a (lab/spill_grid.py: 168 registers, 0 B).
# Usage: OUT=dir bash lab/ab/ab_v140.sh   (GPU host, after setup; the numerics first:
#   python3 -m pytest -m gpu -k serial_sdp_d256)
set -u
out=${OUT:-bench/out}/v140
. lab/ab/ab_lib.sh
v="default;serial_sdp=1;serial_sdp=1,dq_ds_held=0;serial_sdp=1,do_early=0;serial_sdp=1,dq_chunks=2"
AB_TIMEOUT=${AB_TIMEOUT:-200} ab d256 256 "" "$v" 8 2,8,4096

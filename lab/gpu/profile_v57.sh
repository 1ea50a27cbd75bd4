#!/usr/bin/env bash
# v57 (lab/LOG.md): Nsight Compute stall samples of the v54 default bwd_main d=128
# (4,16,4096): the dQ atomics without branches, two dQ accumulators.
exec bash lab/gpu/profile_ncu.sh ncu57 "default"

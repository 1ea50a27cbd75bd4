#!/usr/bin/env bash
# v57 (bench/RESULTS.md): Nsight Compute stall samples of the v54 default bwd_main d=128
# (4,16,4096): the dQ atomics without branches, two dQ accumulators.
exec bash bench/profile_ncu.sh ncu57 "default"

#!/usr/bin/env bash
# v41 third run (lab/LOG.md): d=64 causal G=8 against G=16 once more, d=160 causal, the
# group size's sensitivity at d=128 causal, and smaller groups at d=256 causal.
set -u
out=${OUT:-bench/out}/ab41c
. lab/ab/ab_lib.sh
ab d64c 64 --causal "default;lpt_heads=8;lpt_heads=16" 12
ab d160c 160 --causal "default;lpt_heads=8" 6
ab d128c 128 --causal "default;lpt_heads=4;lpt_heads=8;lpt_heads=16" 6
ab d256c 256 --causal "default;lpt_heads=2;lpt_heads=4" 6

#!/usr/bin/env bash
# v51 (lab/LOG.md): Nsight Compute stall samples of bwd_main d=128 (4,16,4096) under
# exchange_sync, without (the default) and with dq_lag, and the per-trip-barrier plan.
exec bash lab/gpu/profile_ncu.sh ncu51 "default" "dq_lag=1" "tile.exchange_sync=0"

#!/usr/bin/env bash
# racecheck diagnosis on the GPU host (after setup-remote): the minimal probe's four orderings,
# the chain with the plan's releases and with per-thread releases, then the timing of both.
set -u
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
out=${OUT:-lab/out}; mkdir -p "$out/logs"
CS="/usr/local/cuda/bin/compute-sanitizer --tool racecheck --report-api-errors no --racecheck-report all --print-limit 100000"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/card.txt"
/usr/local/cuda/bin/compute-sanitizer --version | tail -1 | tee -a "$out/card.txt"
{
for m in none warp thread named; do
  $CS python3 lab/race/mbar_probe.py $m > "$out/logs/probe_$m.log" 2>&1
  echo "probe $m: $(grep -E 'mode=|RACECHECK SUMMARY' "$out/logs/probe_$m.log" | tr '\n' ' ')"
done
for arrive in warp plan; do
  $CS python3 lab/race/chain_case.py check --arrive $arrive > "$out/logs/chain_$arrive.log" 2>&1
  echo "chain d64 $arrive: $(grep -E '^check|RACECHECK SUMMARY' "$out/logs/chain_$arrive.log" | tr '\n' ' ')"
  python3 lab/race/summarize.py "$out/logs/chain_$arrive.log" --d 64
done
} 2>&1 | tee "$out/diag.txt"
timeout 200 python3 lab/race/chain_case.py time --rounds 5 2>&1 | tee "$out/time.txt"
tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"

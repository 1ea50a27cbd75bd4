#!/usr/bin/env bash
# A slim tree of commit REV (default HEAD) in DIR (default .snapc, git-ignored through
# .git/info/exclude) for a device call to carry: the sources, tests, bench and lab scripts,
# without the stored results, the log, the notebooks and the patches (the working tree and the
# carried paths share the call's 64 MiB). DIR/COMMIT holds REV's short sha.
#   bash lab/gpu/snapshot.sh stats-bulk-padding .snapc
set -eu
rev=${1:-HEAD}; dir=${2:-.snapc}
rm -rf "$dir" && mkdir -p "$dir"
git archive "$rev" | tar -x -C "$dir" --exclude='bench/results*' --exclude='lab/results*' \
  --exclude=lab/LOG.md --exclude=notebooks --exclude=lab/patches
git rev-parse --short "$rev" > "$dir/COMMIT"
grep -qx "/$dir/" .git/info/exclude 2>/dev/null || echo "/$dir/" >> .git/info/exclude
echo "$dir: $(cat "$dir/COMMIT"), $(du -sh "$dir" | cut -f1)"

#!/usr/bin/env bash
# A light working tree for a device call. The device tool sends the working tree (tracked
# files, and untracked ones git does not ignore) and refuses more than 64 MiB; the archive's
# datasets and figures are nearly all of it, and no measurement reads them (a sweep needs
# the code and the sealed hypotheses, and appends its pins to whatever data/MANIFEST.jsonl
# it finds, none included; `probelab import` merges the run back either way).
#
#   scripts/device_tree.sh light      # this checkout: data/*/ and docs/figures/ leave the
#   <the device call>                 #   working tree (data/MANIFEST.jsonl stays)
#   scripts/device_tree.sh restore    # everything back
#   probelab import <files_at>/measured.tar; git add data; git commit
#
# `light` is `git sparse-checkout set --no-cone '/*' '!/data/*/' '!/docs/figures/'` and
# `restore` is `git sparse-checkout disable`: they change only the skip-worktree bits of
# the index, never its entries, so HEAD and any commit made while light keep the whole
# archive (tests/test_device_tree.py makes one). Restore before importing: git refuses to
# add files outside the sparse patterns, and `verify` would miss the absent datasets.
#
#   scripts/device_tree.sh worktree DIR   # or a light checkout of HEAD of its own, in DIR
#
# `worktree` is `git worktree add --no-checkout --detach DIR HEAD`, the same sparse
# patterns set in DIR, then `git -C DIR reset -q --hard`: DIR has its own index, and this
# checkout is not touched at all (for a runner that copies a folder; remove it with
# `git worktree remove DIR`). The session's device tool sends the checkout it was started
# in, so for it use `light`.
set -euo pipefail
patterns=('/*' '!/data/*/' '!/docs/figures/')

travels() {  # bytes of the files in the working tree at $1 that the device tool would send
  (cd "$1" && git ls-files -z --cached --others --exclude-standard \
    | { xargs -0 -r stat -c %s -- 2>/dev/null || true; } | awk '{n += $1} END {print n + 0}')
}

case "${1:-}" in
  light)
    cd "$(git rev-parse --show-toplevel)"
    if [ -n "$(git status --porcelain)" ]; then
      echo "device_tree: the tree is not clean: commit first" >&2; exit 2
    fi
    git sparse-checkout set --no-cone "${patterns[@]}"
    echo "light: $(travels .) bytes would travel (restore: scripts/device_tree.sh restore)"
    ;;
  restore)
    cd "$(git rev-parse --show-toplevel)"
    git sparse-checkout disable
    echo "restored: every tracked file is in the working tree again"
    ;;
  worktree)
    dir="${2:?usage: scripts/device_tree.sh worktree DIR}"
    git worktree add -q --no-checkout --detach "$dir" HEAD
    git -C "$dir" sparse-checkout set --no-cone "${patterns[@]}"
    git -C "$dir" reset -q --hard
    echo "$dir: a light worktree at $(git -C "$dir" rev-parse --short HEAD), $(travels "$dir")" \
      "bytes (remove it: git worktree remove $dir)"
    ;;
  *) echo "usage: scripts/device_tree.sh light|restore|worktree DIR" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# A light working tree for a device run: the code, the sealed hypotheses and data/'s
# manifest and retirements, without the archive's datasets, verdicts and figures (nearly all
# of the tree; no sweep reads them). The lab's device tool sends the working tree and
# refuses more than 64 MiB.
#   scripts/device_tree.sh light     # git sparse-checkout: the datasets leave the work tree
#   <the device call>; probelab import <what came back>/measured.tar
#   scripts/device_tree.sh restore   # git sparse-checkout disable: they are back
# Sparse checkout leaves every index entry and HEAD as they are (only which files are on
# disk changes), so a commit made while light still holds the whole archive.
# For a runner that takes a folder instead, make a light copy with its own index, leaving
# this checkout alone:
#   git worktree add --no-checkout DIR HEAD && git -C DIR sparse-checkout set --no-cone \
#     '/*' '!/data/*/' '!/docs/figures/' && git -C DIR checkout
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
case "${1:-}" in
  light)
    if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
      echo "device_tree: the tree has uncommitted changes: commit first" >&2; exit 2
    fi
    git sparse-checkout set --no-cone '/*' '!/data/*/' '!/docs/figures/'
    echo "light: $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) bytes of tracked files on disk"
    ;;
  restore)
    git sparse-checkout disable
    echo "restored: every tracked file is back in the work tree"
    ;;
  *) echo "usage: scripts/device_tree.sh light|restore" >&2; exit 2 ;;
esac

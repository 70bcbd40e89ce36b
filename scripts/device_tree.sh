#!/usr/bin/env bash
# The device tool sends the working tree (tracked files, and untracked ones git does not
# ignore) and refuses more than 64 MiB. The archive's datasets, verdicts and figures are
# nearly all of it, and no measurement reads them (a sweep needs the code, the sealed
# hypotheses and data/MANIFEST.jsonl, whose pins it extends). `light` takes them out of
# git's index and ignores them for one call: nothing is deleted, and HEAD, the commit being
# measured, still holds them. `restore` puts the index back exactly as HEAD has it.
#   scripts/device_tree.sh light; <the device call>; scripts/device_tree.sh restore
# Commit nothing in between (a commit made while light would drop the archive from it).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude="$(git rev-parse --git-path info/exclude)"
marker="# probelab device_tree: light"
case "${1:-}" in
  light)
    if [ -n "$(git status --porcelain)" ]; then
      echo "device_tree: the tree is not clean: commit first" >&2; exit 2
    fi
    if grep -qxF "$marker" "$exclude" 2>/dev/null; then
      echo "device_tree: already light (run restore)" >&2; exit 2
    fi
    mkdir -p "$(dirname "$exclude")"
    printf '%s\n' "$marker" '/data/*/' '/docs/figures/' "$marker end" >> "$exclude"
    git ls-files -z -- data docs/figures | grep -zv '^data/MANIFEST.jsonl$' \
      | xargs -0 -r git rm -q --cached --
    echo "light: $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes would travel"
    ;;
  restore)
    git reset -q
    sed -i "/^$marker\$/,/^$marker end\$/d" "$exclude"
    if [ -n "$(git status --porcelain)" ]; then
      echo "device_tree: the tree differs from HEAD after restore:" >&2
      git status --short | head >&2; exit 3
    fi
    echo "restored: the index is HEAD's again"
    ;;
  *) echo "usage: scripts/device_tree.sh light|restore" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# The whole NVIDIA measurement in one call on the GPU machine:
#   PROBELAB_GIT_HEAD=$(git rev-parse HEAD) bash scripts/measure_h200.sh
# Installs carried wheels (.whl/, for packages the image lacks), reports the machine, runs
# the tests (TESTS, default all but the slow ones, which CI runs; CUDA tests included),
# sweeps the NVIDIA probes (PROBES, default all of them; PROBES= sweeps none) into data/,
# each pinned in data/MANIFEST.jsonl,
# and runs the benchmark (BENCH=0 skips it). The repo arrives there without git history,
# hence PROBELAB_GIT_HEAD. The tree need not carry the archive: with no data/ (or an empty
# manifest) the sweeps start a fresh chain, with the real manifest they extend a copy of it.
# Datasets, the manifest and logs come back in one $OUT/measured.tar, under their data/
# paths (in 15 MiB parts measured.tar.00, .01, ... where larger), each dataset added as its
# sweep makes it; the manifest so far is also $OUT/MANIFEST.jsonl until the end (a call cut
# short: extract the tar into a folder, put that file at its data/MANIFEST.jsonl, and
# import the folder). Then, here:
#   probelab import <files_at>/measured.tar      # or <files_at>/measured.tar.00
# appends the run's datasets and pins onto this archive (whatever the run's manifest began
# with), checking each, all or nothing; commit data/ after it. Never copy the manifest back
# by hand. Verdicts are not carried: `probelab verify --write` re-derives them here.
set -euo pipefail
: "${PROBELAB_GIT_HEAD:?set PROBELAB_GIT_HEAD to the commit being measured}"
export PROBELAB_GIT_DIRTY="${PROBELAB_GIT_DIRTY:-0}" PYTHONUNBUFFERED=1
OUT="${OUT:-$(mktemp -d)}"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
python3 -m probelab doctor --json > "$OUT/doctor.json"
set +e
python3 -m pytest -q -rs ${TESTS:-tests} 2>&1 | tee "$OUT/pytest.log"
tests_rc=${PIPESTATUS[0]}
set -e
: > "$OUT/datasets.txt"
failed=()
for probe in ${PROBES-byte-perm dmma-f64 mma-sp-f16 mma-sp-s8 mma-sp-s4 mma-sp-bf16 mma-sp-tf32 mma-sp-e4m3 mma-sp-e5m2 wgmma-sp-f16 wgmma-sp-bf16 wgmma-sp-tf32 wgmma-sp-e4m3 wgmma-sp-e5m2 wgmma-sp-s8 mma-f16-f32 mma-f16-f16 mma-bf16-f32 mma-tf32 mma-s8s8 mma-u8u8 mma-s8u8 mma-u8s8 mma-e4m3-f32 mma-e5m2-f32 mma-e4m3-f16 mma-e5m2-f16 mma-s4s4 mma-u4u4 mma-s4u4 mma-u4s4 prmt-modes lop3 shf bfe-bfi bit-scan bmsk fns bit-scan-64 lop3-pred tma-swizzle-b8 tma-swizzle-b16 tma-swizzle-b32 wgmma-bf16-f32-sw64 wgmma-bf16-f32-sw128 wgmma-f16-f16-sw64 wgmma-f16-f16-sw128 wgmma-bf16-mn wgmma-f16-bo}; do
  # probes with a sealed pair their stimulus cannot separate (dmma-f64: restatements sealed
  # before agrees_with; wgmma-f16-rs: the 128B pattern for 64B at 8 rows), recorded as such
  blind=()
  case " dmma-f64 wgmma-f16-rs " in *" $probe "*) blind=(--allow-blind) ;; esac
  started=$SECONDS
  # one probe failing must not lose the others: it is named at the end, the rest kept
  if python3 -m probelab sweep "$probe" --repeats 3 "${blind[@]}" > "$OUT/sweep.txt" 2>&1; then
    cat "$OUT/sweep.txt" | tee -a "$OUT/datasets.txt"
    # each dataset goes into the archive as it is made: a call cut short keeps the earlier
    made=$(sed "s|^$PWD/||" "$OUT/sweep.txt" | grep '^data/.*\.nc$' || true)
    [ -n "$made" ] && tar -rf "$OUT/measured.tar" $made
    cp data/MANIFEST.jsonl "$OUT/MANIFEST.jsonl"  # the pins so far, should the call be cut
  else
    cat "$OUT/sweep.txt"; failed+=("$probe")
  fi
  echo "sweep $probe: $((SECONDS - started)) s" | tee -a "$OUT/sweep-times.txt"
done
rm -f "$OUT/sweep.txt"
if [ "${BENCH:-1}" != 0 ]; then
  # The image sets PYTHONDONTWRITEBYTECODE=1, so every process compiles the modules that
  # ship without bytecode: timed as it is, and as a workstation runs (bytecode written once)
  python3 bench/byte_perm_sweep.py --json "$OUT/bench-no-bytecode.json"
  env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$(mktemp -d)" \
    python3 bench/byte_perm_sweep.py --json "$OUT/bench.json"
fi
# one archive back (the device tool returns at most 8 files): the datasets (added as each
# sweep made them) and the manifest with their pins, under their data/ paths (for
# `probelab import`), and the logs
mkdir -p data && touch data/MANIFEST.jsonl  # no sweep ran: an empty branch, imported as such
tar -rf "$OUT/measured.tar" data/MANIFEST.jsonl -C "$OUT" datasets.txt machine.txt \
  doctor.json pytest.log $( [ -f "$OUT/sweep-times.txt" ] && echo sweep-times.txt )
rm -f "$OUT/MANIFEST.jsonl"
# a file comes back only up to 16 MiB: a larger archive in parts (import reads them from .00)
if [ "$(stat -c %s "$OUT/measured.tar")" -gt $((15 * 1024 * 1024)) ]; then
  split -b 15M -d "$OUT/measured.tar" "$OUT/measured.tar." && rm "$OUT/measured.tar"
fi
echo "tests exit code: $tests_rc"
if [ ${#failed[@]} -gt 0 ]; then echo "sweeps that failed: ${failed[*]}"; exit 3; fi
exit "$tests_rc"

#!/usr/bin/env bash
# The whole NVIDIA measurement in one call on the GPU machine:
#   PROBELAB_GIT_HEAD=$(git rev-parse HEAD) bash scripts/measure_h200.sh
# Installs carried wheels (.whl/, for packages the image lacks), reports the machine, runs
# the tests (TESTS, default all but the slow ones, which CI runs; CUDA tests included), sweeps the NVIDIA probes (PROBES,
# default all of them; PROBES= sweeps none) into data/ (pinned in data/MANIFEST.jsonl, which comes back too) and
# runs the benchmark (BENCH=0 skips it); datasets, pins and logs come back in one
# $OUT/measured.tar (in 15 MiB parts measured.tar.00, .01, ... where larger). The repo arrives there without git history, hence
# PROBELAB_GIT_HEAD.
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
for probe in ${PROBES-byte-perm dmma-f64 mma-sp-f16 mma-sp-s8 mma-sp-s4 mma-f16-f32 mma-f16-f16 mma-bf16-f32 mma-tf32 mma-s8s8 mma-u8u8 mma-s8u8 mma-u8s8 mma-e4m3-f32 mma-e5m2-f32 mma-e4m3-f16 mma-e5m2-f16 mma-s4s4 mma-u4u4 mma-s4u4 mma-u4s4}; do
  # probes with a sealed pair their stimulus cannot separate (dmma-f64: restatements sealed
  # before agrees_with; wgmma-f16-rs: the 128B pattern for 64B at 8 rows), recorded as such
  blind=()
  case " dmma-f64 wgmma-f16-rs " in *" $probe "*) blind=(--allow-blind) ;; esac
  python3 -m probelab sweep "$probe" --repeats 3 "${blind[@]}" | tee -a "$OUT/datasets.txt"
done
if [ "${BENCH:-1}" != 0 ]; then
  # The image sets PYTHONDONTWRITEBYTECODE=1, so every process compiles the modules that
  # ship without bytecode: timed as it is, and as a workstation runs (bytecode written once)
  python3 bench/byte_perm_sweep.py --json "$OUT/bench-no-bytecode.json"
  env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$(mktemp -d)" \
    python3 bench/byte_perm_sweep.py --json "$OUT/bench.json"
fi
# one archive back (the device tool returns at most 8 files): the datasets under their
# data/ paths, the manifest with their pins (copy it back over data/), the logs
cp data/MANIFEST.jsonl "$OUT/"
sed "s|^$PWD/||" "$OUT/datasets.txt" > "$OUT/datasets.rel"
tar -cf "$OUT/measured.tar" -T "$OUT/datasets.rel" -C "$OUT" MANIFEST.jsonl datasets.txt \
  machine.txt doctor.json pytest.log
rm -f "$OUT/datasets.rel" "$OUT/MANIFEST.jsonl"
# a file comes back only up to 16 MiB: a larger archive in parts (cat measured.tar.* | tar -x)
if [ "$(stat -c %s "$OUT/measured.tar")" -gt $((15 * 1024 * 1024)) ]; then
  split -b 15M -d "$OUT/measured.tar" "$OUT/measured.tar." && rm "$OUT/measured.tar"
fi
echo "tests exit code: $tests_rc"
exit "$tests_rc"

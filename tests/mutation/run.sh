#!/usr/bin/env bash
# Mutation testing (mutmut) of metrics, fusion, rerank, parents and the store's gc, in a scratch copy of the
# working tree so that mutmut's mutants/ folder never lands in the repository. Not part of `make test`.
# Usage: tests/mutation/run.sh [SCRATCH_DIR]   (from the repository root; about 4 minutes on 2 cores)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
scratch="${1:-$(mktemp -d)}"
py="$root/.venv/bin"
mkdir -p "$scratch"
cp -r "$root/src" "$root/tests" "$root/pyproject.toml" "$scratch/"
cp "$root/tests/mutation/setup.cfg" "$scratch/setup.cfg"
find "$scratch" -name __pycache__ -prune -exec rm -rf {} +
cd "$scratch"
"$py/mutmut" run --max-children 2 >/dev/null 2>&1 || true
"$py/mutmut" results --all true > results.txt 2>/dev/null
"$py/python" "$root/tests/mutation/score.py" results.txt
echo "survivors: cd $scratch && $py/mutmut results; $py/mutmut show NAME"

#!/usr/bin/env bash
# Mutation testing (mutmut 3) in a scratch copy of the working tree, so that mutmut's mutants/ folder never lands
# in the repository. Not part of `make test`.
# Usage: tests/mutation/run.sh [TARGET] [SCRATCH_DIR]      (from anywhere; see docs/testing.md)
#   TARGET: core (default: metrics, fusion, rerank, parents, store gc; setup.cfg), or one module with its own
#   fast tests: fusion, rerank, significance, compare, results (TARGET.cfg). Test files named in the
#   configuration that do not exist are left out (and listed); BEFORE=1 also leaves out the *_mutants.py files
#   written to kill survivors, which gives the "before" score of docs/testing.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${1:-core}"
cfg="$here/$target.cfg"
[ "$target" = core ] && cfg="$here/setup.cfg"
if [ ! -f "$cfg" ]; then
  echo "run.sh: unknown target '$target'; choose core or one of:" $(cd "$here" && ls *.cfg | grep -v '^setup.cfg$' | sed 's/\.cfg$//') >&2
  exit 2
fi
scratch="${2:-$(mktemp -d)}"
py="$root/.venv/bin"
mkdir -p "$scratch"
rm -rf "$scratch/src" "$scratch/tests" "$scratch/mutants"
cp -r "$root/src" "$root/tests" "$root/pyproject.toml" "$scratch/"
# keep only the test files that exist in this tree
while IFS= read -r line; do
  t="$(echo "$line" | sed 's/^ *//')"
  if [[ "$line" =~ ^\ +tests/.*\.py$ ]] && [ ! -f "$scratch/$t" ]; then echo "left out (missing): $t" >&2; continue; fi
  if [[ "$line" =~ _mutants\.py$ ]] && [ "${BEFORE:-0}" = 1 ]; then echo "left out (BEFORE=1): $t" >&2; continue; fi
  echo "$line"
done < "$cfg" > "$scratch/setup.cfg"
find "$scratch" -name __pycache__ -prune -exec rm -rf {} +
cd "$scratch"
"$py/mutmut" run --max-children "${MUTMUT_CHILDREN:-2}" >mutmut-run.log 2>&1 || true
"$py/mutmut" results --all true > results.txt 2>/dev/null
"$py/python" "$here/score.py" results.txt
echo "survivors: cd $scratch && $py/mutmut results; $py/mutmut show NAME"

#!/usr/bin/env bash
# Compile and run every benchmark program on the CPU, for float and double, and check
# that the scop path and the OpenMP path agree bit for bit (here both are the same C
# loop on the CPU): the paper's 21 (paper_benchmarks.txt) and the hand-written programs.
# Also checks that the generated files are what generate.py produces, and that a few
# files build as CUDA C++ host code with nvcc (skipped when nvcc is missing): j2d5pt,
# poisson2d (coefficient arrays), wave2d (three time levels), grayscott2d (two fields) and
# fdtd2d (fields updated in place).
#
# Usage: c_inputs/check.sh [--nvcc-all]    (from anywhere; exits 1 on any failure)
#   --nvcc-all   build and run every file with nvcc, not only those five.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
nvcc_all=0
[ "${1:-}" = "--nvcc-all" ] && nvcc_all=1
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}"

hand_written="poisson2d varheat2d wave2d acoustic3d heat3dz dampedwave2d grayscott2d fdtd2d acousticvp3d"
benches="$(tr '\n' ' ' <"$here/paper_benchmarks.txt")$hand_written"
nvcc_some=" j2d5pt poisson2d wave2d grayscott2d fdtd2d "
fail=0

if ! python3 "$here/generate.py" --check; then
  echo "FAIL generate.py --check: files differ from what generate.py writes"
  fail=1
fi
for src in "$here"/*.c; do
  if [[ " $benches " != *" $(basename "$src" .c) "* ]]; then
    echo "FAIL $(basename "$src"): neither in paper_benchmarks.txt nor in check.sh's hand_written"
    fail=1
  fi
done

# run_one BENCH TYPE BIN -> prints "TYPE ok" or "TYPE FAIL(...)"; runs -s 64 (3D: -s 24) -t 7 -n 1 -c
run_one() {
  local bench=$1 type=$2 bin=$3 size out
  case $bench in *3d*) size=24 ;; *) size=64 ;; esac
  if ! out="$("$bin" -s "$size" -t 7 -n 1 -c 2>&1)"; then
    echo "$type FAIL(run: $(echo "$out" | tail -1))"; return 1
  fi
  if ! grep -q '^Max error: 0 (relative 0)$' <<<"$out" \
     || ! grep -q '^Bit-identical: yes$' <<<"$out" \
     || ! grep -q '^Average: .* GFLOPS, .* ms$' <<<"$out"; then
    echo "$type FAIL($(grep -E '^(Max error|Bit-identical)' <<<"$out" | tr '\n' ' '))"; return 1
  fi
  echo "$type ok"
}

for b in $benches; do
  src="$here/$b.c"
  line="$(printf '%-12s' "$b")"
  fpp="$(sed -n 's/^#define BENCH_FPP //p' "$src")"
  line+=" fpp=$(printf '%-4s' "$fpp")"
  for type in float double; do
    bin="$tmp/$b-$type"
    if ! gcc -std=gnu99 -O2 -Wall -Wextra -fopenmp -D SB_TYPE=$type -I "$here" "$src" \
         -o "$bin" -lm 2>"$tmp/err"; then
      line+=" | $type FAIL(compile)"; fail=1; cat "$tmp/err" >&2; continue
    fi
    if [ -s "$tmp/err" ]; then
      line+=" | $type FAIL(warnings)"; fail=1; cat "$tmp/err" >&2; continue
    fi
    res="$(run_one "$b" "$type" "$bin")" || fail=1
    line+=" | gcc $res"
  done
  if [ $nvcc_all = 1 ] || [[ "$nvcc_some" == *" $b "* ]]; then
    if command -v nvcc >/dev/null 2>&1; then
      bin="$tmp/$b-nvcc"
      if nvcc -x cu -Xcompiler -fopenmp -D SB_TYPE=float -I "$here" "$src" -o "$bin" \
           2>"$tmp/err"; then
        res="$(run_one "$b" float "$bin")" || fail=1
        line+=" | nvcc $res"
      else
        line+=" | nvcc FAIL(compile)"; fail=1; cat "$tmp/err" >&2
      fi
    else
      line+=" | nvcc skipped (not installed)"
    fi
  fi
  echo "$line"
done

if [ $fail = 0 ]; then echo "ALL OK"; else echo "SOME CHECKS FAILED"; fi
exit $fail

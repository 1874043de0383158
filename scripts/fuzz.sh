#!/bin/sh
# Runs the datatype engine's fuzz target (LLVMFuzzerTestOneInput in tests/test_dtype_core.c)
# under libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer.
#   scripts/fuzz.sh [seconds, default 60] [corpus dir, default build/fuzz-corpus]
# Installs clang if it is missing (Debian).  A failing input is written as crash-* in the
# current directory; replay it with: build/fuzz/fuzz_dtype crash-<hash>
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
corpus=${2:-build/fuzz-corpus}
if ! command -v clang >/dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q clang
fi
mkdir -p build/fuzz "$corpus"
clang -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DNC_FUZZ_TARGET \
    -Isrc -Itests tests/test_dtype_core.c src/core/dtype.c -o build/fuzz/fuzz_dtype
build/fuzz/fuzz_dtype -max_total_time="$seconds" -max_len=400 -print_final_stats=1 "$corpus"

#!/bin/sh
# Builds the libFuzzer target and runs it for SECONDS (default 60) on the seed corpus.
# Exits non-zero when the fuzzer finds a crash (the reproducer is left in build/fuzz-artifacts/).
set -eu
seconds=${1:-60}
here=$(cd "$(dirname "$0")/.." && pwd)
make -C "$here" fuzz >/dev/null
work="$here/build/fuzz-corpus"
artifacts="$here/build/fuzz-artifacts/"
mkdir -p "$work" "$artifacts"
# New inputs go to build/, so the committed seeds stay small and reviewed.
"$here/build/fuzz_frames" -max_total_time="$seconds" -max_len=70000 -timeout=10 -rss_limit_mb=1024 \
    -artifact_prefix="$artifacts" -print_final_stats=1 "$work" "$here/fuzz/corpus"

#!/usr/bin/env bash
# Regenerates the protobuf-c code of Sofa's wire from proto/*.proto.
# Usage: Shared/SofaWire/generate.sh [OUTPUT_DIR]   (default: the committed Generated/ folder)
# The wire tests run it into a temporary folder and compare, so stale generated code fails CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/Generated}
command -v protoc-c >/dev/null || { echo "protoc-c is missing: apt-get install protobuf-c-compiler" >&2; exit 1; }
mkdir -p "$out/include"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
( cd "$here/proto" && protoc-c --c_out="$tmp" sofa.proto )
# The header goes where SwiftPM looks for a C target's public headers.
sed 's|#include "sofa.pb-c.h"|#include "include/sofa.pb-c.h"|' "$tmp/sofa.pb-c.c" > "$out/sofa.pb-c.c"
cp "$tmp/sofa.pb-c.h" "$out/include/sofa.pb-c.h"

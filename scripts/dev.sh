#!/usr/bin/env bash
# Sofa developer entry point. The README's two commands:
#   scripts/dev.sh up     install what is missing, build, start the local cluster (`sofa up`)
#   scripts/dev.sh test   install what is missing, build (no warning allowed), run every test
# Other subcommands: setup, build. Works on Debian 12 with a Swift 6 toolchain on PATH.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

# System packages the build and the test suite need (Debian 12 names).
packages=(
    libsqlite3-dev
    libstemmer-dev
    libzmq3-dev
    libssl-dev
    libprotobuf-c-dev
    zlib1g-dev
    duktape-dev
    libicu-dev
    protobuf-c-compiler
    pkg-config
    docker-compose
    git
    jq
    tcpdump
    curl
    wrk
)

log() { printf 'dev.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    cat >&2 <<'USAGE'
usage: scripts/dev.sh <command> [args...]
  setup              install the missing Debian packages (apt-get; sudo if not root)
  build [swift build args]
                     setup, then `swift build --build-tests`
  up [sofa up flags] build, then run the local cluster: .build/debug/sofa up ...
  test [swift test args]
                     build (failing on any compiler warning), then run every test
                     (`swift test --skip-build`)
USAGE
}

missing_packages() {
    local pkg status
    for pkg in "${packages[@]}"; do
        status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
        if [[ "$status" != "installed" ]]; then
            printf '%s\n' "$pkg"
        fi
    done
}

check_swift() {
    if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
        export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 \
        || die "swift not found on PATH. Install a Swift 6 toolchain for Debian 12 from https://swift.org/install (e.g. unpacked in /opt/swift, with /opt/swift/usr/bin on PATH) and run this again."
    local version
    version="$(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9][0-9]*\)\..*/\1/p' | head -n 1)"
    if [[ -z "$version" || "$version" -lt 6 ]]; then
        die "Sofa needs Swift 6 or newer; found: $(swift --version 2>&1 | head -n 1)"
    fi
}

cmd_setup() {
    command -v dpkg-query >/dev/null 2>&1 \
        || die "dpkg-query not found: scripts/dev.sh supports Debian 12 (bookworm) only."
    local -a missing sudo=()
    mapfile -t missing < <(missing_packages)
    if [[ ${#missing[@]} -gt 0 ]]; then
        if [[ "$(id -u)" -ne 0 ]]; then
            command -v sudo >/dev/null 2>&1 \
                || die "not root and sudo is not installed; as root, run: apt-get install ${missing[*]}"
            sudo=(sudo)
        fi
        log "installing: ${missing[*]}"
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
    fi
    check_swift
}

cmd_build() {
    cmd_setup
    swift build --build-tests "$@"
}

cmd_up() {
    cmd_build
    exec .build/debug/sofa up "$@"
}

# `swift build --build-tests`, its output shown as it comes; fails when the build fails or when
# it prints a warning (Sofa builds with none: CI runs `test`, so a new warning fails CI). An
# incremental build prints only the warnings of the files it recompiles (a clean one shows all).
build_without_warnings() {
    local output status=0
    output="$(mktemp)"
    swift build --build-tests 2>&1 | tee "$output" || status=$?
    # A dependency's own package layout warnings (a file it neither builds nor declares) are its
    # maintainers' to fix, not Sofa's: they are left out of the check.
    sed -i -E "/warning: '[^']+': found [0-9]+ file\(s\) which are unhandled/d" "$output"
    if [[ $status -ne 0 ]]; then
        rm -f "$output"
        die "swift build failed (exit $status)"
    fi
    if grep -q 'warning:' "$output"; then
        log "the build printed warnings; Sofa builds with none:"
        grep -E '(^|: )warning: ' "$output" | sort -u >&2 || true
        rm -f "$output"
        die "fix the warnings above (a clean build: rm -rf .build && scripts/dev.sh test)"
    fi
    rm -f "$output"
}

# The CouchDB client library the HTTP API's tests drive Sofa with (PyPI), pinned.
python_test_tools() {
    command -v python3 >/dev/null 2>&1 || die "python3 is missing (the HTTP API's tests need it): apt-get install python3 python3-pip"
    if ! python3 -c 'import ibmcloudant, requests' >/dev/null 2>&1; then
        log "installing ibmcloudant==0.11.12 (PyPI) for the HTTP API's tests"
        python3 -m pip install --quiet ibmcloudant==0.11.12 \
            || python3 -m pip install --quiet --break-system-packages ibmcloudant==0.11.12 \
            || die "cannot install ibmcloudant==0.11.12 with pip"
    fi
}

cmd_test() {
    cmd_setup
    python_test_tools
    build_without_warnings
    # A process of the suite that crashes (the test process, or a service it started) prints
    # only the crashed thread's backtrace, after the fatal error's message: the end of a CI
    # log then says what failed and where, not a list of idle threads and loaded images.
    export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-threads=crashed,registers=none,images=none,symbolicate=fast}"
    # A failed run ends by repeating what failed (each failed expectation with its message),
    # so that the last lines of a long log name every failure, not only the count.
    local output status
    output="$(mktemp)"
    set +e
    swift test --skip-build "$@" 2>&1 | tee "$output"
    status=${PIPESTATUS[0]}
    set -e
    if [[ $status -ne 0 ]]; then
        echo "---- what failed (repeated from above) ----"
        grep -aE "✘|recorded an issue|Fatal error|fatal error" "$output" | cut -c1-1500 | tail -n 80
    fi
    rm -f "$output"
    return "$status"
}

if [[ $# -lt 1 ]]; then
    usage
    exit 2
fi

command="$1"
shift
case "$command" in
    setup) cmd_setup ;;
    build) cmd_build "$@" ;;
    up)    cmd_up "$@" ;;
    test)  cmd_test "$@" ;;
    -h|--help|help) usage ;;
    *) log "unknown command: $command"; usage; exit 2 ;;
esac

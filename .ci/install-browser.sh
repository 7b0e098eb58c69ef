#!/usr/bin/env bash
# What the browser tests (tests/report/test_webapp.py) need on a fresh Debian machine, run as root:
# Debian's chromium and two font packages (so screenshots show text). The playwright Python
# package comes from pyproject's dev extra; Playwright's own browser download is never used,
# the tests launch /usr/bin/chromium. Idempotent and quiet: prints one line, or apt's log on
# failure.
set -euo pipefail

packages=(chromium fonts-liberation fonts-dejavu-core)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-browser: run as root to install ${missing[*]}" >&2
        exit 1
    fi
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
        >"$log" 2>&1; then
        cat "$log" >&2
        echo "install-browser: apt-get failed" >&2
        exit 1
    fi
fi

# Debian's wrapper script may print a harmless shell warning on stderr: keep only the version.
version=$(/usr/bin/chromium --version 2>/dev/null) || {
    echo "install-browser: /usr/bin/chromium does not start" >&2
    exit 1
}
echo "install-browser: ${version}"

#!/usr/bin/env bash
# browser.sh — installs the headless browser the web app's tests drive:
# Debian's chromium package. Prints its path. Uses sudo when not root.
set -euo pipefail

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

if ! dpkg -s chromium >/dev/null 2>&1; then
  echo "browser: installing chromium" >&2
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >&2
  as_root apt-get install -y -qq chromium >&2
fi
command -v chromium

#!/usr/bin/env bash
# Install the system packages a feature needs, from Debian's packages, when missing and root.
# Usage: scripts/system_packages.sh chromium npm
set -euo pipefail
need=()
for pkg in "$@"; do
  case "$pkg" in
    chromium) [ -x /usr/bin/chromium ] || need+=(chromium) ;;
    npm) command -v npm >/dev/null 2>&1 || need+=(npm) ;;
    *) command -v "$pkg" >/dev/null 2>&1 || need+=("$pkg") ;;
  esac
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "note: please install ${need[*]} (e.g. sudo apt-get install -y ${need[*]})" >&2
fi

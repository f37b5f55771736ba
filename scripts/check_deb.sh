#!/usr/bin/env bash
# Builds the Debian package of Kiln with CPack (`cpack -G DEB`, /opt/kiln) from the build tree,
# installs it with dpkg, checks the installed Kiln (kilnc, Python, plugins, a model: the checks of
# scripts/check_kiln_package.py) and removes the package again, also when a check fails.
# Installing needs root: as another user, only the package is built and inspected.
#
#   bash scripts/check_deb.sh [OUT_DIR]   # the .deb in OUT_DIR (default: a temporary folder)
#
# Environment: scripts/common.sh (KILN_BUILD_DIR).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-deb-XXXXXX")"
out="$(realpath -m "${1:-$work/out}")"
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then dpkg -r kiln >/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

kiln_quiet cpack -G DEB --config "$KILN_BUILD_DIR/CPackConfig.cmake" -B "$out"
deb="$(echo "$out"/kiln_*.deb)"
[ -f "$deb" ] || { kiln_log "cpack wrote no kiln_*.deb into $out"; exit 1; }
contents="$(dpkg-deb -c "$deb")"
grep -q ' ./opt/kiln/bin/kilnc$' <<<"$contents" || {
  kiln_log "$deb has no /opt/kiln/bin/kilnc"
  exit 1
}
kiln_log "built $deb ($(du -h "$deb" | cut -f1)); depends on: $(dpkg-deb -f "$deb" Depends)"

if [ "$(id -u)" -ne 0 ]; then
  kiln_log "not root: the package is not installed"
  exit 0
fi
if dpkg-query -W -f='${Status}' kiln 2>/dev/null | grep -q 'install ok installed'; then
  kiln_log "a kiln package is installed already; not replacing it (dpkg -r kiln to allow the check)"
  exit 1
fi
installed=1
kiln_quiet dpkg -i "$deb"
/opt/kiln/bin/kilnc --help >/dev/null
mkdir -p "$work/run"
(cd "$work/run" && env -u KILN_PLUGIN_PATH -u KILN_RUNTIME_PATH \
  PYTHONPATH=/opt/kiln/lib/python3/dist-packages PYTHONDONTWRITEBYTECODE=1 \
  "$KILN_PYTHON" "$KILN_REPO/scripts/check_kiln_package.py" /opt/kiln "$work/run")
installed=0
dpkg -r kiln >/dev/null
[ ! -e /opt/kiln/bin/kilnc ] || { kiln_log "dpkg -r kiln left /opt/kiln/bin/kilnc"; exit 1; }
kiln_log "ok: the .deb installs into /opt/kiln, works there and uninstalls"

#!/usr/bin/env bash
# Installs lance-sync and everything its tests need on a fresh Debian/Ubuntu machine:
#   - system packages (Java 17 for Spark and the test catalog servers; jarjar and
#     Jackson to build the Iceberg REST test server; Chromium, in which the tests render the
#     HTML reports and pages) through apt, when missing;
#   - a virtual environment in .venv with lance-sync (editable) and all extras.
# Safe to re-run. Set LANCE_SYNC_SKIP_APT=1 to skip the apt step (tests that need a missing
# package then skip, naming it; in CI, with CI=true, a missing Chromium fails its tests).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  openjdk-17-jdk-headless        # Spark, Hive Metastore 2.3, Iceberg REST server; javac for launchers
  libjarjar-java                 # relocates Jackson for the Iceberg REST test server
  libjackson2-core-java libjackson2-databind-java libjackson2-annotations-java
  libslf4j-java
  libxerial-sqlite-jdbc-java     # optional JDBC catalog mode of the Iceberg REST test server
  chromium                       # headless browser of tests/support/browser.py (no browser download)
  fonts-liberation               # text in its screenshots (a recommendation apt skips here)
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ] && [ "${LANCE_SYNC_SKIP_APT:-0}" != "1" ]; then
  echo "install: apt packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
echo "install: done; run .venv/bin/lance-sync --help" >&2

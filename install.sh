#!/bin/sh
# Installs flow: picks the release executable for this platform, verifies it against the release's
# SHA256SUMS and puts it in ~/.local/bin (or <prefix>/bin). Nothing is installed when a check fails.
#   curl -fsSL https://github.com/__FLOW_REPO__/releases/latest/download/install.sh | sh
#   sh install.sh [--prefix <dir>] [--version <x.y.z>]
# Environment: FLOW_DOWNLOAD_BASE, the folder (URL) holding SHA256SUMS and the binaries (default: the GitHub
# release, latest or --version's); FLOW_REPO, owner/name on GitHub; FLOW_TARGET, the platform (linux-x64, ...).
set -eu

REPO="${FLOW_REPO:-__FLOW_REPO__}"
prefix="${HOME}/.local"
version=""

fail() {
  printf 'error: %s\n' "$1" >&2
  [ $# -gt 1 ] && printf 'hint: %s\n' "$2" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || fail "--prefix needs a folder"; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --version) [ $# -ge 2 ] || fail "--version needs a version, for example 0.1.0"; version="${2#v}"; shift 2 ;;
    --version=*) version="${1#--version=}"; version="${version#v}"; shift ;;
    -h|--help) sed -n '2,9p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument '$1'" "usage: install.sh [--prefix <dir>] [--version <x.y.z>]" ;;
  esac
done

detect_target() {
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    MINGW* | MSYS* | CYGWIN*) os=windows ;;
    *) fail "no flow release for the system '$(uname -s)'" "build it from source: npm ci && npm run build" ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail "no flow release for the processor '$(uname -m)'" "build it from source: npm ci && npm run build" ;;
  esac
  # An x64 shell under Rosetta on Apple silicon: the native arm64 binary is the right one.
  if [ "$os" = darwin ] && [ "$arch" = x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 0)" = 1 ]; then arch=arm64; fi
  suffix=""
  if [ "$os" = linux ] && { ls /lib/ld-musl-* >/dev/null 2>&1 || ldd --version 2>&1 | grep -qi musl; }; then
    [ "$arch" = x64 ] || fail "no flow release for musl on $arch" "build it from source: npm ci && npm run build"
    suffix=-musl
  fi
  echo "$os-$arch$suffix"
}

download() { # <url> <file>
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1" || fail "could not download $1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || fail "could not download $1"
  else
    fail "neither curl nor wget is installed" "install one of them, or download flow by hand (docs/INSTALL.md)"
  fi
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1" | cut -d' ' -f1
  else fail "neither sha256sum nor shasum is installed: the download cannot be verified"
  fi
}

target="${FLOW_TARGET:-}"
[ -n "$target" ] || target="$(detect_target)" || exit 1
if [ -n "${FLOW_DOWNLOAD_BASE:-}" ]; then
  base="${FLOW_DOWNLOAD_BASE%/}"
else
  case "$REPO" in __*) fail "this install.sh does not name the repository to download from" "set FLOW_REPO=<owner>/<name> or FLOW_DOWNLOAD_BASE=<url>" ;; esac
  if [ -n "$version" ]; then base="https://github.com/$REPO/releases/download/v$version"
  else base="https://github.com/$REPO/releases/latest/download"; fi
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT INT TERM
download "$base/SHA256SUMS" "$tmp/SHA256SUMS"
# SHA256SUMS names one file per platform: flow-<version>-<target>[.exe]; its line gives the name and the hash.
line="$(grep -E "^[0-9a-f]{64}  flow-[^ ]*-$target(\.exe)?\$" "$tmp/SHA256SUMS" | head -n 1 || true)"
[ -n "$line" ] || fail "the release at $base has no flow for $target" "see the files there, or build from source: npm ci && npm run build"
expected="${line%%  *}"
file="${line#*  }"
case "$file" in */* | *..*) fail "SHA256SUMS names an unexpected file '$file'" ;; esac
[ -z "$version" ] || case "$file" in "flow-$version-"*) ;; *) fail "the release at $base has $file, not version $version" ;; esac

download "$base/$file" "$tmp/$file"
actual="$(sha256 "$tmp/$file")"
[ "$actual" = "$expected" ] || fail "checksum mismatch for $file: SHA256SUMS says $expected, the download is $actual" \
  "nothing was installed; try again, and report it if it persists"

exe=flow
case "$target" in windows-*) exe=flow.exe ;; esac
bindir="$prefix/bin"
mkdir -p "$bindir" || fail "cannot create $bindir"
chmod 755 "$tmp/$file"
# Same folder, then rename: a running flow is never overwritten mid-write.
cp "$tmp/$file" "$bindir/.$exe.installing" && mv -f "$bindir/.$exe.installing" "$bindir/$exe" || fail "cannot write $bindir/$exe"
printf 'installed %s as %s\n' "$file" "$bindir/$exe"
case ":${PATH}:" in
  *":$bindir:"*) ;;
  *) printf 'note: %s is not on your PATH; add it, for example: export PATH="%s:$PATH"\n' "$bindir" "$bindir" ;;
esac

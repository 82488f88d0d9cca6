#!/usr/bin/env bash
# The Debian package end to end, from an already-built tree (no rebuild: the
# suite's build made every target): CPack makes ckptscope_<version>_amd64.deb
# in a scratch folder, dpkg -x unpacks it into a scratch root, and the root is
# checked file by file, with desktop-file-validate, appstreamcli validate
# --no-net and update-mime-database, and the installed programs are run from it.
#   check_package.sh BUILD_DIR SCRATCH_DIR VERSION
set -euo pipefail
build="$1"
scratch="$2"
version="$3"

fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps desktop-file-validate appstreamcli update-mime-database file; do
  command -v "$tool" >/dev/null || fail "$tool is missing (packaging/bootstrap.sh installs it)"
done

rm -rf "$scratch"
mkdir -p "$scratch/out"
( cd "$scratch/out" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/out" >"$scratch/cpack.log" 2>&1 ) ||
  { cat "$scratch/cpack.log" >&2; fail "cpack failed"; }
deb="$scratch/out/ckptscope_${version}_amd64.deb"
[ -f "$deb" ] || fail "no $deb (made: $(ls "$scratch/out"))"
echo "made $(basename "$deb"): $(du -h "$deb" | cut -f1)"

# The control file: Depends from dpkg-shlibdeps (the libraries the programs link).
control="$(dpkg-deb -f "$deb")"
grep -q '^Package: ckptscope$' <<<"$control" || fail "Package is not ckptscope"
grep -q "^Version: ${version}$" <<<"$control" || fail "Version is not $version"
grep -q '^Architecture: amd64$' <<<"$control" || fail "Architecture is not amd64"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"
depends_names="$(echo "$depends" | tr ',|' '\n\n' | sed 's/^ *//; s/[ (].*//')"
for lib in libc6 libstdc++6 libqt6widgets6 libqt6core6 zlib1g; do
  grep -qxF "$lib" <<<"$depends_names" || fail "Depends lacks $lib"
done
# LibTorch's own package (libtorch1.13 on Debian 12), from the plugin and ckptscope-train.
grep -qx 'libtorch[0-9.]*' <<<"$depends_names" || fail "Depends lacks LibTorch's package"

root="$scratch/root"
dpkg -x "$deb" "$root"
need() { [ -e "$root/$1" ] || fail "the package has no /$1"; }
id=io.github.ckptscope.CkptScope
for f in usr/bin/ckptscope usr/bin/ckptscope-cli usr/bin/ckptscope-train usr/bin/ckptscope-askpass \
         usr/share/applications/$id.desktop usr/share/metainfo/$id.metainfo.xml \
         usr/share/mime/packages/ckptscope.xml usr/share/icons/hicolor/scalable/apps/$id.svg \
         usr/share/man/man1/ckptscope.1.gz usr/share/man/man1/ckptscope-cli.1.gz \
         usr/share/man/man1/ckptscope-askpass.1.gz \
         usr/share/bash-completion/completions/ckptscope-cli; do
  need "$f"
done
plugin=""
for candidate in "$root"/usr/lib/ckptscope/ckptscope-train-backend.so "$root"/usr/lib/*/ckptscope/ckptscope-train-backend.so; do
  [ -f "$candidate" ] && plugin="${candidate#"$root"/}" && break
done
[ -n "$plugin" ] || fail "the package has no training plugin under /usr/lib"
for size in 16 24 32 48 64 128 256 512; do
  png="usr/share/icons/hicolor/${size}x${size}/apps/$id.png"
  need "$png"
  grep -q "PNG image data, $size x $size" <<<"$(file "$root/$png")" || fail "$png is not a ${size}x${size} PNG: $(file -b "$root/$png")"
done
# Nothing outside /usr; every program stripped and linked against nothing missing.
[ "$(ls "$root")" = usr ] || fail "the package installs outside /usr: $(ls "$root")"
for elf in usr/bin/ckptscope usr/bin/ckptscope-cli usr/bin/ckptscope-train usr/bin/ckptscope-askpass "$plugin"; do
  grep -q ', stripped' <<<"$(file -b "$root/$elf")" || fail "$elf is not stripped"
  ! ldd "$root/$elf" | grep -q 'not found' || fail "$elf links a library that is not installed: $(ldd "$root/$elf" | grep 'not found')"
done
for page in ckptscope ckptscope-cli ckptscope-askpass; do
  gzip -t "$root/usr/share/man/man1/$page.1.gz" || fail "$page.1.gz is not gzip"
  zcat "$root/usr/share/man/man1/$page.1.gz" | grep -q "^\.TH $(echo "$page" | tr a-z A-Z | sed 's/-/\\\\-/') 1 .*CkptScope $version" ||
    fail "$page.1 has no .TH line for version $version"
done

# The validators.
desktop-file-validate "$root/usr/share/applications/$id.desktop" || fail "desktop-file-validate"
appstreamcli validate --no-net "$root/usr/share/metainfo/$id.metainfo.xml" || fail "appstreamcli validate"
grep -q "^Exec=ckptscope %[FU]$" "$root/usr/share/applications/$id.desktop" || fail "Exec does not take files (%F/%U)"
for type in application/x-pytorch-checkpoint application/x-safetensors; do
  grep -q "^MimeType=.*$type;" "$root/usr/share/applications/$id.desktop" || fail "the desktop entry lacks $type"
done
# The file types: update-mime-database reads the XML and maps the globs.
mkdir -p "$scratch/mime/packages"
cp "$root/usr/share/mime/packages/ckptscope.xml" "$scratch/mime/packages/"
update-mime-database "$scratch/mime" >"$scratch/mime.log" 2>&1 ||
  { cat "$scratch/mime.log" >&2; fail "update-mime-database rejects ckptscope.xml"; }
for glob in '*.pt' '*.pth'; do
  grep -qF "application/x-pytorch-checkpoint:$glob" "$scratch/mime/globs2" || fail "$glob is not mapped"
done
grep -qF 'application/x-safetensors:*.safetensors' "$scratch/mime/globs2" || fail "*.safetensors is not mapped"

# Bash completion: the commands, then a command's options.
completions="$(bash -c 'source "$1"; COMP_WORDS=(ckptscope-cli ve); COMP_CWORD=1; _ckptscope_cli; echo "${COMPREPLY[*]}";
  COMP_WORDS=(ckptscope-cli scan --r); COMP_CWORD=2; _ckptscope_cli; echo "${COMPREPLY[*]}"' _ \
  "$root/usr/share/bash-completion/completions/ckptscope-cli")"
[ "$completions" = $'verify\n--recursive' ] || fail "bash completion gave: $completions"

# The installed programs, run from the scratch root: the versions, and the app
# finds its plugin where the package put it.
cli_version="$("$root/usr/bin/ckptscope-cli" --version)"
echo "$cli_version"
grep -q "^ckptscope-cli $version$" <<<"$cli_version" || fail "ckptscope-cli --version"
echo "$cli_version" | grep -Eq '^LibTorch [0-9]+\.[0-9]+' || fail "ckptscope-cli --version names no LibTorch"
app_version="$(env -u DISPLAY -u WAYLAND_DISPLAY "$root/usr/bin/ckptscope" --version)"
echo "$app_version"
grep -q "^ckptscope $version$" <<<"$app_version" || fail "ckptscope --version"
echo "$app_version" | grep -Eq '^Qt 6\.[0-9]+' || fail "ckptscope --version names no Qt"
grep -qF "(training plugin $(realpath "$root/$plugin"))" <<<"$app_version" ||
  fail "the installed app does not find its plugin at /$plugin"
# The plugin loads with every symbol resolved (as the app's QLibrary does) and
# exports the factory the app looks up.
python3 -c 'import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_LOCAL)
lib.ckptscope_create_train_backend' "$root/$plugin" || fail "the installed plugin does not load"
echo "package OK"

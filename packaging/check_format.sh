#!/usr/bin/env bash
# Checks that C++ files follow the committed .clang-format.
#   packaging/check_format.sh           the files changed since the commit in .clang-format-since
#   packaging/check_format.sh --all     every tracked file
#   packaging/check_format.sh --fix     reformats the files the check would name
# .clang-format-since holds a commit: files touched after it must be
# formatted (format on touch); "all" once the whole tree is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fix=0
all=0
for a in "$@"; do
  case "$a" in
    --fix) fix=1 ;;
    --all) all=1 ;;
    *) echo "usage: packaging/check_format.sh [--all] [--fix]" >&2; exit 2 ;;
  esac
done
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed" >&2; exit 1; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "check_format: not a git checkout" >&2; exit 1; }

since=$(tr -d '[:space:]' < .clang-format-since)
[ "$since" = all ] && all=1
if [ $all -eq 1 ]; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h')
else
  if ! git cat-file -e "$since^{commit}" 2>/dev/null; then
    echo "check_format: commit $since (.clang-format-since) is not in this clone's history" >&2
    exit 1
  fi
  # Committed since then, plus what is changed in the working tree.
  mapfile -t files < <({ git diff --name-only --diff-filter=AMR "$since" -- '*.cpp' '*.h';
                         git ls-files --others --exclude-standard -- '*.cpp' '*.h'; } | sort -u)
fi

bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -eq 0 ]; then
  echo "check_format: ${#files[@]} files formatted as .clang-format says"
  exit 0
fi
if [ $fix -eq 1 ]; then
  clang-format -i "${bad[@]}"
  echo "check_format: reformatted ${#bad[@]} files: ${bad[*]}"
  exit 0
fi
echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted (packaging/check_format.sh --fix):"
printf '  %s\n' "${bad[@]}"
exit 1

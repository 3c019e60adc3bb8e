#!/bin/sh
# waf @VERSION@, self-contained build, content @HASH@.
# This POSIX sh stub carries, after its last line, a @COMPRESSION@-compressed tar of the deno
# runtime, the program and every npm package it loads. The first run unpacks it once into
# $XDG_CACHE_HOME/waf/<content>/ (~/.cache/waf/<content>/ by default), or into
# <data-dir>/.runtime/<content>/ when the home is not writable; every run then execs the runtime
# on the program, offline, with the arguments unchanged. Made by scripts/compile.ts; see
# docs/operations.md, "The self-contained executable". Tools: sh, tail, @DECOMPRESSOR@, tar,
# sha256sum, ls, grep, cat, mkdir, mv, rm, chmod.
set -u
H=@HASH@
START=@START@
self=$0
unset CDPATH

# The data directory as waf reads it from its arguments (the unpack place of last resort).
data=./data
want=
for arg in "$@"; do
  if [ -n "$want" ]; then
    [ "$want" = --data-dir ] && data=$arg
    want=
    continue
  fi
  case $arg in
    --) break ;;
    --data-dir=*) data=${arg#--data-dir=} ;;
    --data-dir | --config | --log-format) want=$arg ;;
  esac
done

cache=
if [ -n "${XDG_CACHE_HOME:-}" ] && [ "${XDG_CACHE_HOME#/}" != "$XDG_CACHE_HOME" ]; then
  cache=$XDG_CACHE_HOME/waf
elif [ -n "${HOME:-}" ]; then
  cache=$HOME/.cache/waf
fi
build='{"kind":"self-contained","content_hash":"'$H'"}'

# Names, inodes, sizes and change times of every shipped file: a cheap check on every start
# (an edit, a truncation or a replaced file changes it; nobody can set a change time back).
# Not the "total" lines: allocated blocks still change when the disk writes a new file back.
listing() {
  (cd "$1" && LC_ALL=C ls -lcinR --full-time CONTENTS.sha256 bin src deno_dir/npm) 2>/dev/null |
    grep -v '^total ' | sha256sum
}

# Unchanged since it was unpacked and verified.
ready() {
  [ -f "$1/.verified" ] && [ "$(listing "$1")" = "$(cat "$1/.verified" 2>/dev/null)" ]
}

# Every shipped file matches the manifest whose hash names this build.
intact() {
  sum=$(sha256sum <"$1/CONTENTS.sha256" 2>/dev/null) || return 1
  [ "${sum%% *}" = "$H" ] &&
    [ "$(cat "$1/src/build.json" 2>/dev/null)" = "$build" ] &&
    (cd "$1" && sha256sum --quiet --strict -c CONTENTS.sha256 >/dev/null 2>&1)
}

# Unpacks into $1/$H: into a private folder first, verified, then renamed into place, so a
# concurrent first run either wins the rename or finds the winner's copy. Fails with 1 when $1
# cannot be written, with 2 when the unpacked files do not check out.
unpack() {
  mkdir -p "$1" 2>/dev/null && [ -w "$1" ] || return 1
  tmp=$1/.unpack-$H-$$
  rm -rf "$tmp" && mkdir "$tmp" || return 1
  if ! tail -c +"$START" "$self" | @DECOMPRESS@ | tar -xf - -C "$tmp" --no-same-owner ||
    ! printf '%s\n' "$build" >"$tmp/src/build.json" || ! intact "$tmp" ||
    ! listing "$tmp" >"$tmp/.verified"; then
    rm -rf "$tmp"
    echo "waf: could not unpack $self into $1/$H (damaged file or full disk?)" >&2
    return 2
  fi
  if [ -d "$1/$H" ] && ! ready "$1/$H"; then
    mv -T "$1/$H" "$1/.stale-$H-$$" 2>/dev/null && rm -rf "$1/.stale-$H-$$"
  fi
  mv -T "$tmp" "$1/$H" 2>/dev/null || rm -rf "$tmp"
  ready "$1/$H"
}

dir=
for base in "$cache" "$data/.runtime"; do
  [ -n "$base" ] && [ -d "$base/$H" ] || continue
  if ready "$base/$H"; then
    dir=$base/$H
    break
  fi
  # Moved or restored from a backup (new inodes) but still intact: note the new listing.
  if intact "$base/$H"; then
    listing "$base/$H" >"$base/$H/.verified.$$" 2>/dev/null &&
      mv -f "$base/$H/.verified.$$" "$base/$H/.verified" 2>/dev/null
    rm -f "$base/$H/.verified.$$"
    dir=$base/$H
    break
  fi
done
if [ -z "$dir" ]; then
  for base in "$cache" "$data/.runtime"; do
    [ -n "$base" ] || continue
    if [ "$base" = "$data/.runtime" ] && [ ! -d "$data" ]; then
      mkdir -p "$data" 2>/dev/null && chmod 700 "$data" 2>/dev/null
    fi
    unpack "$base"
    case $? in
      0) dir=$base/$H && break ;;
      2) exit 1 ;;
    esac
  done
fi
if [ -z "$dir" ]; then
  echo "waf: cannot unpack the runtime: neither ${cache:-\$HOME/.cache/waf} nor $data/.runtime is writable (set XDG_CACHE_HOME or --data-dir)" >&2
  exit 1
fi

dir=$(cd "$dir" && pwd)
export DENO_DIR="$dir/deno_dir" DENO_NO_UPDATE_CHECK=1 DENO_NO_PACKAGE_JSON=1
exec "$dir/bin/deno" run @DENO_FLAGS@ --config "$dir/src/deno.json" "$dir/src/main.ts" "$@"
exit 1

# Shared helpers for build_engines.sh and bench.sh (sourced, not run).
# Finds trtexec, reads which flags it has (TensorRT 8.x vs 10.x) and how to pass the
# plugin library to it. bash 4, grep, sed, coreutils; nm (binutils) is optional.
# shellcheck shell=bash
# shellcheck disable=SC2034  # TRT_VERSION, TRTEXEC etc. are read by the sourcing scripts

die() { echo "$PROG: error: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }
need_arg() { [[ $# -ge 2 && -n $2 ]] || die "option $1 needs a value (see --help)"; }

# find_trtexec [PATH]: sets TRTEXEC from the argument, $TRTEXEC, PATH, JetPack's
# /usr/src/tensorrt/bin or $TENSORRT_ROOT/bin.
find_trtexec() {
  local want=${1:-${TRTEXEC:-}}
  if [[ -n $want ]]; then
    if [[ -x $want ]]; then TRTEXEC=$want; return 0; fi
    if command -v "$want" >/dev/null 2>&1; then TRTEXEC=$(command -v "$want"); return 0; fi
    die "trtexec '$want' is not an executable file"
  fi
  if command -v trtexec >/dev/null 2>&1; then TRTEXEC=$(command -v trtexec); return 0; fi
  local c
  for c in /usr/src/tensorrt/bin/trtexec ${TENSORRT_ROOT:+"$TENSORRT_ROOT/bin/trtexec"}; do
    if [[ -x $c ]]; then TRTEXEC=$c; return 0; fi
  done
  die "trtexec not found (looked on PATH, /usr/src/tensorrt/bin, \$TENSORRT_ROOT/bin); on a Jetson install it with 'sudo apt-get install tensorrt' (or nvidia-jetpack), or pass --trtexec PATH"
}

# probe_trtexec: reads 'trtexec --help' once; sets TRT_VERSION (e.g. 8.2.1 / 10.3.0),
# and TRTEXEC_HELP.
probe_trtexec() {
  TRTEXEC_HELP=$("$TRTEXEC" --help 2>&1 || true)
  local tag
  tag=$(printf '%s\n' "$TRTEXEC_HELP" | sed -n 's/.*\[TensorRT v\([0-9][0-9]*\)\].*/\1/p' | head -n 1)
  [[ -n $tag ]] || die "'$TRTEXEC --help' did not print a '[TensorRT vNNNN]' tag; is this TensorRT's trtexec?"
  # < 10: major*1000 + minor*100 + patch; >= 10: major*10000 + minor*100 + patch
  if ((10#$tag >= 100000)); then
    TRT_VERSION="$((10#$tag / 10000)).$((10#$tag / 100 % 100)).$((10#$tag % 100))"
  else
    TRT_VERSION="$((10#$tag / 1000)).$((10#$tag / 100 % 10)).$((10#$tag % 100))"
  fi
}

# trtexec_has FLAG: true when 'trtexec --help' lists FLAG (e.g. --skipInference).
trtexec_has() {
  printf '%s\n' "$TRTEXEC_HELP" | grep -Eq -- "(^|[[:space:]])$1([=[:space:]]|$)"
}

# exports_symbol LIB SYMBOL: true when LIB defines the dynamic symbol (needs nm).
exports_symbol() {
  command -v nm >/dev/null 2>&1 || return 1
  nm -D --defined-only "$1" 2>/dev/null | awk '{print $NF}' | grep -qx "$2"
}

# plugin_flag LIB MODE: the trtexec option that loads LIB.
#   MODE auto: TensorRT < 8.6 -> --plugins; otherwise --dynamicPlugins when LIB exports
#   getCreators (IPluginV3 libraries, TensorRT 10), else --staticPlugins (libraries that
#   register their creators when loaded: REGISTER_TENSORRT_PLUGIN). Without nm: by version.
plugin_flag() {
  local lib=$1 mode=$2
  case $mode in
    plugins) echo --plugins ;;
    static) echo --staticPlugins ;;
    dynamic) echo --dynamicPlugins ;;
    auto)
      if ! trtexec_has --staticPlugins; then
        echo --plugins
      elif ! command -v nm >/dev/null 2>&1; then
        # cannot look at the library: our TensorRT >= 10 build always exports getCreators
        if ((${TRT_VERSION%%.*} >= 10)); then echo --dynamicPlugins; else echo --staticPlugins; fi
      elif trtexec_has --dynamicPlugins && exports_symbol "$lib" getCreators; then
        echo --dynamicPlugins
      else
        echo --staticPlugins
      fi ;;
    *) die "--plugin-mode must be auto, plugins, static or dynamic, got '$mode'" ;;
  esac
}

# default_plugin: $TRT_SPARSE_PLUGIN_LIB, then build-jetson/ and build/ of the repository.
default_plugin() {
  local c
  for c in "${TRT_SPARSE_PLUGIN_LIB:-}" "$REPO_ROOT/build-jetson/libtrt_sparse_plugin.so" \
    "$REPO_ROOT/build/libtrt_sparse_plugin.so"; do
    if [[ -n $c && -f $c ]]; then echo "$c"; return 0; fi
  done
  return 1
}

# file_bytes PATH: size in bytes (portable: no stat -c).
file_bytes() { wc -c <"$1" | tr -d ' '; }

# abspath P: absolute form of P (P need not exist).
abspath() {
  if [[ -d $1 ]]; then (cd "$1" && pwd)
  elif [[ $1 == /* ]]; then echo "$1"
  else echo "$(pwd)/$1"
  fi
}

# print_cmd ARGS...: the command, shell-quoted, on one line.
print_cmd() {
  printf '%q' "$1"; shift
  (($# == 0)) || printf ' %q' "$@"
  printf '\n'
}

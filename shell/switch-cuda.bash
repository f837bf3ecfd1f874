#!/usr/bin/env bash
# A standalone CUDA toolkit switch script, written by `cudaenv use VERSION --write FILE`.
# It needs nothing but bash (or zsh); cudaenv does not have to be installed where it runs.
#
#   source FILE          switch this shell to the toolkit named in cuda_root below
#   FILE COMMAND ARGS    run one command with that toolkit (e.g. FILE nvcc --version)
#
# What it does, in this order:
#   1. removes from PATH and LD_LIBRARY_PATH every entry that lies in a known CUDA toolkit folder
#      (the ones listed in cuda_known, /usr/local/cuda and any /usr/local/cuda-N*), so nothing piles up;
#   2. puts this toolkit's bin first on PATH and its library folder first on LD_LIBRARY_PATH
#      (LD_LIBRARY_PATH is unset when it ends up empty);
#   3. sets CUDA_HOME and CUDA_PATH to the toolkit folder.
# Sourcing it twice gives the same environment.

cudaenv_version=__CUDAENV_VERSION__
cuda_version=__CUDAENV_CUDA_VERSION__
cuda_root=__CUDAENV_ROOT__
cuda_lib=__CUDAENV_LIB__
cuda_link=__CUDAENV_LINK__
cuda_known=(__CUDAENV_KNOWN__)

# Prints the colon-separated list $1 without the entries that belong to a known toolkit folder.
_cuda_strip() {
    local rest="$1" entry root out="" keep
    [ -n "$rest" ] || return 0
    rest="$rest:"
    while [ -n "$rest" ]; do
        entry=${rest%%:*}
        rest=${rest#*:}
        keep=1
        for root in "${cuda_known[@]}" "$cuda_link"; do
            case "$entry" in
                "$root" | "$root"/*) keep=0 ;;
            esac
        done
        case "$entry" in
            "$cuda_link"-[0-9]*) keep=0 ;;
            "") keep=0 ;;
        esac
        if [ "$keep" = 1 ]; then
            out="$out${out:+:}$entry"
        fi
    done
    printf '%s' "$out"
}

if [ ! -d "$cuda_root" ]; then
    printf 'switch-cuda: %s is not a folder on this machine\n' "$cuda_root" >&2
    return 1 2>/dev/null || exit 1
fi

_cuda_rest=$(_cuda_strip "${PATH-}")
export PATH="$cuda_root/bin${_cuda_rest:+:$_cuda_rest}"
_cuda_rest=$(_cuda_strip "${LD_LIBRARY_PATH-}")
if [ -n "$cuda_lib" ]; then
    export LD_LIBRARY_PATH="$cuda_lib${_cuda_rest:+:$_cuda_rest}"
elif [ -n "$_cuda_rest" ]; then
    export LD_LIBRARY_PATH="$_cuda_rest"
else
    unset LD_LIBRARY_PATH
fi
export CUDA_HOME="$cuda_root"
export CUDA_PATH="$cuda_root"
unset _cuda_rest
hash -r 2>/dev/null || true

# Sourced: done. Run as a program: run the command given, with this toolkit.
_cuda_sourced=0
if [ -n "${ZSH_EVAL_CONTEXT-}" ]; then
    case "$ZSH_EVAL_CONTEXT" in *:file*) _cuda_sourced=1 ;; esac
elif (return 0 2>/dev/null); then
    _cuda_sourced=1
fi
if [ "$_cuda_sourced" = 1 ]; then
    unset _cuda_sourced
    printf 'CUDA %s at %s\n' "$cuda_version" "$cuda_root" >&2
else
    if [ "$#" -gt 0 ]; then
        exec "$@"
    fi
    printf 'CUDA %s at %s\n' "$cuda_version" "$cuda_root" >&2
    printf 'run `source %s` to switch your shell (running it only switches this script)\n' "$0" >&2
fi

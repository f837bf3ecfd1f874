# source: the shim `pyenv rehash` wrote for python3 on a machine with pyenv 2.6.30 and PYENV_ROOT=/root/.pyenv (~/.pyenv/shims/python3, copied as it is; the template is create_prototype_shim in https://github.com/pyenv/pyenv/blob/master/libexec/pyenv-rehash)
# ---
#!/usr/bin/env bash
set -e
[ -n "$PYENV_DEBUG" ] && set -x

program="${0##*/}"

export PYENV_ROOT="/root/.pyenv"
SHIM_PATH=${0%/*}
if [[ $SHIM_PATH != "/root/.pyenv/shims" ]]; then
  export _PYENV_SHIM_PATH="$SHIM_PATH"
fi
exec "/root/.pyenv/libexec/pyenv" exec "$program" "$@"

# cudaenv shell hook for zsh. Load it from ~/.zshrc with:
#     eval "$(cudaenv init zsh)"
# It defines:
#   * a `cudaenv` function: `cudaenv use 12.1` and `cudaenv use --off` change this shell (the function
#     evals what the real `cudaenv use` prints); every other subcommand goes straight to the program;
#   * completion of subcommands and installed toolkit versions (compinit loaded before or after the hook);
#   * the .cuda-version auto-switch from a chpwd hook: entering a directory with a .cuda-version (or
#     below one) switches, leaving it switches back; nothing runs while the directory stays the same.

typeset -g _CUDAENV_HOOK_VERSION=__CUDAENV_VERSION__
typeset -g _CUDAENV_COMMANDS=__CUDAENV_COMMANDS__

cudaenv() {
    emulate -L zsh
    local _cudaenv_arg _cudaenv_code
    if [[ "${1-}" == use ]]; then
        shift
        for _cudaenv_arg in "$@"; do
            case "$_cudaenv_arg" in
                -h|--help|--complete) command cudaenv use "$@"; return;;
            esac
        done
        _cudaenv_code="$(command cudaenv use --shell zsh "$@")" || return
        eval "$_cudaenv_code"
        typeset -g _CUDAENV_LAST_PWD=
        return 0
    fi
    command cudaenv "$@"
}

_cudaenv_hook() {
    emulate -L zsh
    [[ "$PWD" == "${_CUDAENV_LAST_PWD-}" ]] && return 0
    typeset -g _CUDAENV_LAST_PWD=$PWD
    local _cudaenv_dir=${PWD%/} _cudaenv_file= _cudaenv_code
    while true; do
        if [[ -f "$_cudaenv_dir/.cuda-version" ]]; then
            _cudaenv_file=$_cudaenv_dir/.cuda-version
            break
        fi
        [[ -n "$_cudaenv_dir" ]] || break
        _cudaenv_dir=${_cudaenv_dir%/*}
    done
    [[ "$_cudaenv_file" == "${_CUDAENV_LAST_FILE-}" ]] && return 0
    typeset -g _CUDAENV_LAST_FILE=$_cudaenv_file
    if _cudaenv_code="$(command cudaenv use --auto --quiet --shell zsh)"; then
        eval "$_cudaenv_code"
    fi
    return 0
}

_cudaenv_zsh_complete() {
    if (( CURRENT == 2 )); then
        compadd -- ${=_CUDAENV_COMMANDS}
    else
        case "$words[2]" in
            use|link|uninstall) compadd -- ${(f)"$(command cudaenv use --complete 2>/dev/null)"};;
        esac
    fi
}
# Register now when compinit ran before the hook, and again at the first prompt: that covers a compinit
# that runs after the hook (later in .zshrc, or in a framework loaded after it). Then the check removes itself.
_cudaenv_compdef() {
    (( $+functions[compdef] )) && compdef _cudaenv_zsh_complete cudaenv
    add-zsh-hook -d precmd _cudaenv_compdef
    return 0
}

autoload -Uz add-zsh-hook
(( $+functions[compdef] )) && compdef _cudaenv_zsh_complete cudaenv
add-zsh-hook precmd _cudaenv_compdef
add-zsh-hook chpwd _cudaenv_hook
_cudaenv_hook

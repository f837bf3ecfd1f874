# cudaenv shell hook for bash. Load it from ~/.bashrc with:
#     eval "$(cudaenv init bash)"
# It defines:
#   * a `cudaenv` function: `cudaenv use 12.1` and `cudaenv use --off` change this shell (the function
#     evals what the real `cudaenv use` prints); every other subcommand goes straight to the program;
#   * tab completion of subcommands and of the installed toolkit versions;
#   * the .cuda-version auto-switch: entering a directory with a .cuda-version (or below one) switches,
#     leaving it switches back. It runs from PROMPT_COMMAND and returns at once while $PWD is unchanged.

_CUDAENV_HOOK_VERSION=__CUDAENV_VERSION__
_CUDAENV_COMMANDS=__CUDAENV_COMMANDS__

cudaenv() {
    local _cudaenv_arg
    if [ "${1-}" = use ]; then
        shift
        for _cudaenv_arg in "$@"; do
            case "$_cudaenv_arg" in
                -h|--help|--complete) command cudaenv use "$@"; return;;
            esac
        done
        local _cudaenv_code
        _cudaenv_code="$(command cudaenv use --shell bash "$@")" || return
        eval "$_cudaenv_code"
        _CUDAENV_LAST_PWD=
        return 0
    fi
    command cudaenv "$@"
}

_cudaenv_hook() {
    local _cudaenv_status=$?
    if [ "$PWD" = "${_CUDAENV_LAST_PWD-}" ]; then
        return "$_cudaenv_status"
    fi
    _CUDAENV_LAST_PWD=$PWD
    local _cudaenv_dir=${PWD%/} _cudaenv_file=
    while :; do
        if [ -f "$_cudaenv_dir/.cuda-version" ]; then
            _cudaenv_file=$_cudaenv_dir/.cuda-version
            break
        fi
        [ -n "$_cudaenv_dir" ] || break
        _cudaenv_dir=${_cudaenv_dir%/*}
    done
    if [ "$_cudaenv_file" = "${_CUDAENV_LAST_FILE-}" ]; then
        return "$_cudaenv_status"
    fi
    _CUDAENV_LAST_FILE=$_cudaenv_file
    local _cudaenv_code
    if _cudaenv_code="$(command cudaenv use --auto --quiet --shell bash)"; then
        eval "$_cudaenv_code"
    fi
    return "$_cudaenv_status"
}

# Candidates never pass through shell expansion: no `compgen -W` (it expands $(...) and backticks in its
# word list) and no unquoted $(...) (word splitting and globbing). Each word is compared as a literal prefix.
_cudaenv_complete() {
    local cur=${COMP_WORDS[COMP_CWORD]} _cudaenv_word
    local -a _cudaenv_words
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        IFS=' ' read -r -a _cudaenv_words <<< "$_CUDAENV_COMMANDS"
        for _cudaenv_word in "${_cudaenv_words[@]}"; do
            case "$_cudaenv_word" in "$cur"*) COMPREPLY+=("$_cudaenv_word");; esac
        done
        return
    fi
    case "${COMP_WORDS[1]}" in
        use|link|uninstall)
            while IFS= read -r _cudaenv_word; do
                case "$_cudaenv_word" in "$cur"*) COMPREPLY+=("$_cudaenv_word");; esac
            done < <(command cudaenv use --complete 2>/dev/null)
            ;;
    esac
}
complete -F _cudaenv_complete cudaenv 2>/dev/null

case ";${PROMPT_COMMAND-};" in
    *";_cudaenv_hook;"*) ;;
    *) PROMPT_COMMAND="_cudaenv_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}";;
esac

# cudaenv shell hook for fish. Load it from ~/.config/fish/config.fish with:
#     cudaenv init fish | source
# It defines:
#   * a `cudaenv` function: `cudaenv use 12.1` and `cudaenv use --off` change this shell (the function
#     sources what the real `cudaenv use` prints); every other subcommand goes straight to the program;
#   * completion of subcommands and installed toolkit versions;
#   * the .cuda-version auto-switch on a PWD event: entering a directory with a .cuda-version (or below
#     one) switches, leaving it switches back; nothing runs while the directory stays the same.

set -g _CUDAENV_HOOK_VERSION __CUDAENV_VERSION__
set -g _CUDAENV_COMMANDS __CUDAENV_COMMANDS__

function cudaenv --description 'cudaenv: switch CUDA toolkits in this shell'
    if test (count $argv) -ge 1; and test "$argv[1]" = use
        set -e argv[1]
        if contains -- --help $argv; or contains -- -h $argv; or contains -- --complete $argv
            command cudaenv use $argv
            return
        end
        set -l _cudaenv_code (command cudaenv use --shell fish $argv)
        or return
        string join \n -- $_cudaenv_code | source
        set -g _CUDAENV_LAST_PWD
        return 0
    end
    command cudaenv $argv
end

function __cudaenv_hook --on-variable PWD --description 'cudaenv: .cuda-version auto-switch'
    test "$PWD" = "$_CUDAENV_LAST_PWD"; and return 0
    set -g _CUDAENV_LAST_PWD $PWD
    set -l _cudaenv_dir (string replace -r '/$' '' -- $PWD)
    set -l _cudaenv_file ''
    while true
        if test -f "$_cudaenv_dir/.cuda-version"
            set _cudaenv_file "$_cudaenv_dir/.cuda-version"
            break
        end
        test -n "$_cudaenv_dir"; or break
        set _cudaenv_dir (string replace -r '/[^/]*$' '' -- "$_cudaenv_dir")
    end
    test "$_cudaenv_file" = "$_CUDAENV_LAST_FILE"; and return 0
    set -g _CUDAENV_LAST_FILE $_cudaenv_file
    set -l _cudaenv_code (command cudaenv use --auto --quiet --shell fish)
    and string join \n -- $_cudaenv_code | source
    return 0
end

complete -c cudaenv -f
complete -c cudaenv -n __fish_use_subcommand -a "$_CUDAENV_COMMANDS"
complete -c cudaenv -n '__fish_seen_subcommand_from use link uninstall' -a '(command cudaenv use --complete 2>/dev/null)'

set -g _CUDAENV_LAST_FILE ''
__cudaenv_hook

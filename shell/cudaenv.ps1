# cudaenv shell hook for PowerShell. Load it from $PROFILE with:
#     (& cudaenv init pwsh) -join "`n" | Invoke-Expression
# It defines:
#   * a `cudaenv` function: `cudaenv use 12.1` and `cudaenv use --off` change this session (the function
#     runs what the real `cudaenv use` prints); every other subcommand goes straight to the program;
#   * completion of subcommands and installed toolkit versions;
#   * the .cuda-version auto-switch, run from the prompt: entering a directory with a .cuda-version (or
#     below one) switches, leaving it switches back; it returns at once while the directory is unchanged.

$global:_CUDAENV_HOOK_VERSION = __CUDAENV_VERSION__
$global:_CUDAENV_COMMANDS = __CUDAENV_COMMANDS__

function global:_cudaenv_exe {
    $found = Get-Command -Name cudaenv -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1
    if ($found) { return $found.Source }
    return $null
}

function global:cudaenv {
    $exe = _cudaenv_exe
    if (-not $exe) { Write-Error 'cudaenv: the cudaenv program is not on PATH'; return }
    if ($args.Count -ge 1 -and $args[0] -eq 'use') {
        $rest = @($args | Select-Object -Skip 1)
        if ($rest -contains '--help' -or $rest -contains '-h' -or $rest -contains '--complete') { & $exe use @rest; return }
        $code = & $exe use --shell pwsh @rest
        if ($LASTEXITCODE -eq 0 -and $code) { Invoke-Expression (@($code) -join "`n") }
        $global:_CUDAENV_LAST_PWD = $null
        return
    }
    & $exe @args
}

function global:_cudaenv_hook {
    $here = $PWD.ProviderPath
    if ($here -eq $global:_CUDAENV_LAST_PWD) { return }
    $global:_CUDAENV_LAST_PWD = $here
    $dir = $here
    $file = ''
    while ($dir) {
        $candidate = [System.IO.Path]::Combine($dir, '.cuda-version')
        if ([System.IO.File]::Exists($candidate)) { $file = $candidate; break }
        $dir = [System.IO.Path]::GetDirectoryName($dir)
    }
    if ($file -eq $global:_CUDAENV_LAST_FILE) { return }
    $global:_CUDAENV_LAST_FILE = $file
    $exe = _cudaenv_exe
    if (-not $exe) { return }
    $code = & $exe use --auto --quiet --shell pwsh
    if ($LASTEXITCODE -eq 0 -and $code) { Invoke-Expression (@($code) -join "`n") }
}

if (-not $global:_CUDAENV_HOOKED) {
    $global:_CUDAENV_HOOKED = $true
    $global:_CUDAENV_LAST_FILE = ''
    $global:_CUDAENV_ORIGINAL_PROMPT = $function:prompt
    function global:prompt {
        $savedStatus = $global:LASTEXITCODE
        try { _cudaenv_hook } catch { }
        $global:LASTEXITCODE = $savedStatus
        & $global:_CUDAENV_ORIGINAL_PROMPT
    }
}

# The `cudaenv` function above declares no parameters (it takes $args), so PowerShell binds none of its
# arguments and completes them with the completer registered for the command's name in native mode. This
# is also what -CommandName without -ParameterName does (PowerShell-Docs#11248, PowerShell#24031); the
# script block then gets ($wordToComplete, $commandAst, $cursorPosition), never the parameter-style five.
Register-ArgumentCompleter -Native -CommandName cudaenv -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $words = @($commandAst.CommandElements | ForEach-Object { $_.ToString() })
    if ($words.Count -le 2 -and -not ($words.Count -eq 2 -and $wordToComplete -eq '')) {
        $candidates = $global:_CUDAENV_COMMANDS -split ' '
    } elseif (@('use', 'link', 'uninstall') -contains $words[1]) {
        $exe = _cudaenv_exe
        $candidates = if ($exe) { @(& $exe use --complete 2>$null) } else { @() }
    } else {
        $candidates = @()
    }
    $candidates | Where-Object { $_ -like "$wordToComplete*" } | ForEach-Object {
        [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
    }
}

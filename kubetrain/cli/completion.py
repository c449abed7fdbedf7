"""``kubetrain completion bash|zsh``: a shell completion script for the command line.

The script is generated from the argument parser, so it always knows every command, sub-command
(``submit pytorch``, ``top node``) and option. It completes file names after ``-f`` and
``--kubeconfig``; it does not complete job names, since that would ask an API server (and could
start the local control plane) on every Tab. zsh gets the same script through bashcompinit.

Usage::

    source <(kubetrain completion bash)     # in ~/.bashrc
    source <(kubetrain completion zsh)      # in ~/.zshrc

Owns: the script. Must not: run anything when sourced beyond defining the functions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

FILE_OPTIONS = ("-f", "--filename", "--kubeconfig", "--home")

Tree = dict[str, list[str]]  # "submit pytorch" -> the words that may follow it


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "completion",
        help="print a shell completion script (bash or zsh)",
        description="Print a completion script: `source <(kubetrain completion bash)` in "
        "~/.bashrc, or `source <(kubetrain completion zsh)` in ~/.zshrc.",
    )
    parser.add_argument("shell", choices=("bash", "zsh"))
    parser.set_defaults(func=run)


def tree(parser: argparse.ArgumentParser, path: str = "") -> Tree:
    """For each command path (``""`` for the top), the sub-commands and options after it."""
    words: list[str] = []
    found: Tree = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words.append(name)
                found.update(tree(sub, f"{path} {name}".strip()))
        else:
            words += [o for o in action.option_strings if o.startswith("--") or len(o) == 2]
    found[path] = words
    return found


def bash_script(paths: Mapping[str, list[str]]) -> str:
    known = "|".join(f'"{p}"' for p in sorted(paths) if p)
    cases = "".join(
        f'        "{p}") echo "{" ".join(words)}" ;;\n' for p, words in sorted(paths.items())
    )
    files = "|".join(FILE_OPTIONS)
    return f"""# kubetrain shell completion: source <(kubetrain completion bash)
_kubetrain_known() {{
    case "$1" in
        {known}) return 0 ;;
    esac
    return 1
}}
_kubetrain_words() {{
    case "$1" in
{cases}    esac
}}
_kubetrain() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local key="" i word
    case "$prev" in
        {files}) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    esac
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        [[ "$word" == "--" ]] && {{ COMPREPLY=($(compgen -f -- "$cur")); return 0; }}
        [[ "$word" == -* ]] && continue
        if _kubetrain_known "${{key:+$key }}$word"; then key="${{key:+$key }}$word"; fi
    done
    COMPREPLY=($(compgen -W "$(_kubetrain_words "$key")" -- "$cur"))
}}
complete -o default -F _kubetrain kubetrain
"""


def zsh_script(paths: Mapping[str, list[str]]) -> str:
    return (
        "# kubetrain shell completion: source <(kubetrain completion zsh)\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(paths)
    )


def run(args: argparse.Namespace) -> int:
    from kubetrain.cli import main  # main lists this module among its commands

    paths = tree(main.build_parser())
    script = bash_script(paths) if args.shell == "bash" else zsh_script(paths)
    sys.stdout.write(script)
    return 0

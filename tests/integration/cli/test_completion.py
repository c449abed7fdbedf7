"""The shell completion script, generated from the argument parser (kubetrain.cli.completion)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kubetrain.cli import completion, main


def test_the_tree_knows_commands_sub_commands_and_options() -> None:
    paths = completion.tree(main.build_parser())
    assert {"run", "submit", "list", "ls", "logs", "wait", "top", "completion"} <= set(paths[""])
    assert {"pytorch", "mpi", "trainjob"} <= set(paths["submit"])
    assert "--workers" in paths["submit pytorch"]
    assert "--runtime" in paths["submit trainjob"]
    assert {"job", "node"} <= set(paths["top"])
    assert {"--follow", "--tail", "--replica", "--kubeconfig", "-n"} <= set(paths["logs"])


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["kubetrain", "sub"], ["submit"]),
        (["kubetrain", "submit", "py"], ["pytorch"]),
        (["kubetrain", "submit", "pytorch", "--wo"], ["--workers"]),
        (["kubetrain", "-v", "wait", "x", "--fo"], ["--for"]),
    ],
    ids=["a command", "a framework of submit", "an option of submit pytorch", "after a name"],
)
def test_bash_completes(words: list[str], expected: list[str]) -> None:
    script = completion.bash_script(completion.tree(main.build_parser()))
    words_text = " ".join(f"'{w}'" for w in words)
    probe = (
        f"{script}\nCOMP_WORDS=({words_text}); COMP_CWORD={len(words) - 1}; _kubetrain; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == expected


def test_zsh_uses_the_bash_script_through_bashcompinit() -> None:
    script = completion.zsh_script({"": ["run"]})
    assert "bashcompinit" in script
    assert "complete -o default -F _kubetrain kubetrain" in script

"""`npu-studio COMMAND --help` prints the help of every command (argparse expands `%` in help
texts: a literal percent sign must be written `%%`, else --help dies with a traceback)."""

from __future__ import annotations

import pytest

from npu_studio.app_args import COMMANDS
from npu_studio.cli import build_parser


@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_every_command(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser(command).parse_args([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: npu-studio " + command in capsys.readouterr().out

"""The flag policy cannot miss a path-taking flag (core/compile/flag_policy.py).

Truth: iree-compile's own option list (`--help-list-hidden`, read here by this test, not by the
policy's parser): every option whose help mentions a file, path, folder or directory is refused
with a path outside the workspace and with a relative name (the compiler's current folder), and a
variant recording such a flag never writes outside (the user's file byte-identical).
"""

from __future__ import annotations

import re
import subprocess

import pytest

from npu_studio.core.compile.flag_policy import refusal
from npu_studio.core.compile.toolchain import iree_compile
from npu_studio.core.debug import dispatch_break as brk
from npu_studio.core.debug.precision import DEMOTIONS
from npu_studio.core.workspace import trust

from .test_workspace_trust import cli, edit_manifest, refused_in_one_line, sent, tree, user, variant_record  # noqa: F401

MENTIONS_A_FILE = re.compile(r"\b(file|files|filename|path|paths|dir|directory|directories|folder)\b", re.I)


def help_options() -> list[tuple[str, str]]:
    """(name with dashes, help text) of every option iree-compile lists, its continuation lines joined."""
    text = subprocess.run([str(iree_compile()), "--help-list-hidden"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    options: list[list[str]] = []
    for line in text.splitlines():
        m = re.match(r"^  (--?[A-Za-z0-9][\w.-]*)(=<[^>]*>)?\s*(.*)$", line)
        if m:
            options.append([m.group(1), (m.group(2) or "") + " " + m.group(3)])
        elif options and line.startswith("      "):
            options[-1][1] += " " + line.strip()
    return [(name, about) for name, about in options]


PATH_OPTIONS = [name for name, about in help_options() if MENTIONS_A_FILE.search(about)]


def test_the_help_lists_the_options_the_tester_found():
    names = set(PATH_OPTIONS)
    assert len(names) > 50
    for escaped in ("--iree-vm-bytecode-source-listing", "--iree-parameter-export", "--iree-parameter-splat",
                    "--iree-parameter-import", "--iree-preprocessing-transform-spec-filename",
                    "--iree-preprocessing-pdl-spec-filename"):
        assert escaped in names


def test_every_option_that_mentions_a_file_is_refused_outside_the_workspace(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    passed = []
    for name in PATH_OPTIONS:
        for value in (f"{outside}/keep.txt", f"scope={outside}/keep.txt", "keep.txt", f"{ws}/../outside/k"):
            if refusal(f"{name}={value}", root=ws) is None:
                passed.append(f"{name}={value}")
    assert passed == []


def test_a_value_given_as_the_next_argument_is_refused():
    assert "NAME=VALUE" in refusal("--iree-vm-bytecode-source-listing", root=None)
    assert "NAME=VALUE" in refusal("--iree-parameter-export", root=None)


def test_the_flags_the_studio_itself_records_pass(tmp_path):
    ws = tmp_path / "ws"
    (ws / "substitutions").mkdir(parents=True)
    own = [brk.SYNC_ENTRY, brk.NO_CONST_EVAL, f"{brk.BREAK_FLAG}=@main_graph:3", *sum(DEMOTIONS.values(), ()),
           f"--iree-hal-substitute-executable-source=main$async_dispatch_0={ws}/substitutions/x.mlir",
           f"--mlir-print-ir-tree-dir={ws}/dumps", "--iree-opt-level=O3", "--iree-llvmcpu-target-cpu=host",
           "--iree-llvmcpu-stack-allocation-limit=65536", "--iree-opt-const-eval"]
    assert {f: refusal(f, root=ws) for f in own} == {f: None for f in own}


def test_variant_create_refuses_the_listing_flag_and_a_recorded_one_never_writes_outside(sent, user):
    _, mine, before = user
    flag = f"--iree-vm-bytecode-source-listing={mine / 'notes.txt'}"
    refused_in_one_line(cli("variant", sent.root, "create", "evil", f"--flags={flag}"), "outside the workspace")
    edit_manifest(sent, lambda d: d.setdefault("variants", {}).update(evil=variant_record([flag])))
    trust.grant(sent.root)
    refused_in_one_line(cli("variant", sent.root, "build", "evil", "--trust"), "manifest.json", "refused")
    assert tree(mine) == before


@pytest.mark.parametrize("flag", ["--iree-parameter-import=scope={mine}/keep/a.txt",
                                  "--iree-preprocessing-pdl-spec-filename={mine}/keep/a.txt",
                                  "--iree-preprocessing-transform-spec-filename={mine}/keep/a.txt",
                                  "--iree-parameter-splat={mine}/notes.txt", "--iree-parameter-export={mine}/n"])
def test_each_path_flag_the_tester_found_is_refused_at_variant_create(sent, user, flag):
    _, mine, before = user
    refused_in_one_line(cli("variant", sent.root, "create", "v", f"--flags={flag.format(mine=mine)}"),
                        "outside the workspace")
    assert tree(mine) == before

"""Snapshot diffs: locations and huge constants are no change; the fast diff agrees with difflib."""

from __future__ import annotations

import difflib
import random
import subprocess
import sys

from npu_studio.core.ir.diff import DiffOptions, diff_texts, normalize_text, opcodes

A = """#loc1 = loc("Conv_0")
module {
  %0 = arith.addf %a, %b : f32 loc(#loc1)
  %1 = arith.mulf %0, %0 : f32 loc(callsite("x(" at fused["a", "b"]))
  ^bb0(%in: f32 loc(unknown), %out: f32 loc("Conv_0")):
  %c = arith.constant dense<"0xHEX"> : tensor<64xf32>
}
#loc2 = loc("input")
""".replace("HEX", "AB" * 300)


def test_locations_and_elided_constants_are_no_change_unless_asked():
    b = (A.replace("loc(#loc1)", "loc(#loc7)").replace('#loc2 = loc("input")', '#loc9 = loc("other")')
         .replace("AB" * 300, "CD" * 300))
    assert not diff_texts(A, b).changed
    assert diff_texts(A, b, options=DiffOptions(locations=True)).changed
    assert diff_texts(A, b, options=DiffOptions(constants=True)).changed
    lines, origin = normalize_text(A)
    assert all("loc(" not in line for line in lines)
    assert lines[2] == "  %1 = arith.mulf %0, %0 : f32"  # nested parentheses inside a string
    assert origin[0] == 1  # the alias line is dropped, the rest keep their original line numbers


def test_a_real_change_shows_and_the_patch_applies_to_the_first_text(tmp_path):
    b = A.replace("arith.addf", "arith.subf").replace("loc(#loc1)", "loc(#loc3)")
    d = diff_texts(A, b, "a.mlir", "b.mlir")
    assert d.counts() == (1, 1)
    assert "-  %0 = arith.addf %a, %b : f32\n+  %0 = arith.subf %a, %b : f32\n" in d.unified()
    (tmp_path / "a.mlir").write_text(A)
    (tmp_path / "p.patch").write_text(d.patch_text())
    subprocess.run(["patch", "-s", str(tmp_path / "a.mlir"), str(tmp_path / "p.patch")], check=True)
    patched = (tmp_path / "a.mlir").read_text()
    assert "arith.subf %a, %b : f32 loc(#loc3)" in patched and "arith.addf" not in patched


def test_matching_lines_agree_with_difflib_on_random_edits():
    # The anchored diff may pick different but equally long alignments: compare the matched line count.
    rng = random.Random(5)
    for _ in range(30):
        a = [rng.randrange(12) for _ in range(rng.randrange(0, 80))]
        b = list(a)
        for _ in range(rng.randrange(0, 8)):
            op = rng.randrange(3)
            if op == 0 and b:
                del b[rng.randrange(len(b))]
            elif op == 1:
                b.insert(rng.randrange(len(b) + 1), rng.randrange(12))
            elif b:
                b[rng.randrange(len(b))] = rng.randrange(12)
        codes = opcodes(a, b)
        # The opcodes rebuild b from a.
        rebuilt = []
        for tag, i1, i2, j1, j2 in codes:
            rebuilt += a[i1:i2] if tag == "equal" else b[j1:j2]
            if tag == "equal":
                assert a[i1:i2] == b[j1:j2]
        assert rebuilt == b
        ours = sum(i2 - i1 for tag, i1, i2, _, _ in codes if tag == "equal")
        theirs = sum(n for *_, n in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
        assert ours >= theirs - 2  # anchors can cost a line or two against difflib's choice, never more


def test_cli_diff_dispatch_creation_to_flow_shows_the_outlining_and_no_locations(example_workspace):
    proc = subprocess.run([sys.executable, "-m", "npu_studio", "diff", str(example_workspace.root),
                           "dispatch-creation", "flow"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    changed = [ln for ln in proc.stdout.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert "+  flow.executable private @SingleConv$async_dispatch_0 {" in changed
    assert any("flow.dispatch @SingleConv$async_dispatch_0::" in ln for ln in changed if ln.startswith("+"))
    assert any("flow.dispatch.workgroups" in ln for ln in changed if ln.startswith("-"))
    assert not any("loc(" in ln or ln[1:].startswith("#loc") for ln in changed)
    bad = subprocess.run([sys.executable, "-m", "npu_studio", "diff", str(example_workspace.root), "flow",
                          "--dispatch", "9"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_changed_spans_mark_the_characters_that_differ():
    from npu_studio.core.ir.diff import INTRA_LINE_MAX, changed_spans

    a, b = "  %6 = arith.addf %in, %in_1 : f32", "  %6 = arith.mulf %in, %in_2 : f32"
    a_spans, b_spans = changed_spans(a, b)
    assert [a[s:e] for s, e in a_spans] == ["add", "1"] and [b[s:e] for s, e in b_spans] == ["mul", "2"]
    # everything outside the spans is the same text on both sides
    keep = lambda text, spans: "".join(c for k, c in enumerate(text) if not any(s <= k < e for s, e in spans))  # noqa: E731
    assert keep(a, a_spans) == keep(b, b_spans)
    # unrelated lines, and lines too long to compare, are wholly changed
    assert changed_spans("return", "%x = tensor.empty()") == ([(0, 6)], [(0, 19)])
    long = "x" * INTRA_LINE_MAX
    assert changed_spans(long, long + "y") == ([(0, len(long))], [(0, len(long) + 1)])

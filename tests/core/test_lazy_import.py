"""lazy_module: a stand-in that imports its module on the first attribute read, then reads like it."""

from __future__ import annotations

import subprocess
import sys


def test_the_module_loads_on_first_use_and_then_reads_like_the_module():
    code = ("import sys\nfrom npu_studio.core.lazy_import import lazy_module\n"
            "m = lazy_module('colorsys')\nprint('colorsys' in sys.modules)\n"
            "print(m.rgb_to_hsv(1.0, 0.0, 0.0))\nprint('colorsys' in sys.modules)\n"
            "import colorsys\nprint(m.hls_to_rgb is colorsys.hls_to_rgb, 'rgb_to_yiq' in vars(m))\n"
            "print(lazy_module('colorsys') is colorsys)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "False"  # nothing imported by making the stand-in
    assert out[1] == "(0.0, 1.0, 1.0)"  # red in HSV, by hand
    assert out[2] == "True"
    assert out[3] == "True True"  # the namespace is copied in: later reads are plain attribute reads
    assert out[4] == "True"  # once loaded, the module itself is handed out

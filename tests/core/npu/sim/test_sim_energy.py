"""Energy by component and area: a one-tile program worked out by hand; the target keys."""

from __future__ import annotations

import dataclasses

import pytest

from npu_studio.core.npu.target.cost_model import CostModel
from npu_studio.core.npu.program.npu_ir import Buffer, DispatchInfo, NpuProgram, Step, Task
from npu_studio.core.npu.sim import simulate
from npu_studio.core.npu.sim.energy import area, energy
from npu_studio.core.npu.target.target import RESOURCES, TargetError, load_target, parse_target

DEFAULT = (RESOURCES / "default.toml").read_text()


def _target(cost: CostModel):
    return dataclasses.replace(
        load_target("tiny"), name="hand", clock_mhz=100, mac_rows=8, mac_cols=8,
        dataflow="output-stationary", sram_bytes=4096, dram_bytes_per_cycle=16, dma_channels=2,
        dma_setup_cycles=10, cost=cost)


def _one_tile(target, dtype="f16"):
    info = DispatchInfo(0, "d0", "loc", "matmul", "linalg.matmul", True, "", ("M", "N", "K"),
                        (8, 8, 8), ("parallel", "parallel", "reduction"), (8, 8, 8), (0, 1, 2), 1, 0,
                        ("x",), ("y",), (), dtype=dtype)
    dram = tuple(Buffer(b, 4096, dtype, (), "dram", i * 4096, "input", (0, 1)) for i, b in enumerate("xy"))
    sram = tuple(Buffer(b, 1024, dtype, (), "sram", i * 1024, "tile", (0, 1)) for i, b in enumerate("ac"))
    task = Task(0, 0, "npu.matmul", False, (0, 0, 0), (8, 8, 8), (
        Step("dma_in", ("x",), ("a",), bytes=640),
        Step("compute", ("a",), ("c",), ops=512),
        Step("dma_out", ("c",), ("y",), bytes=256)), ())
    return NpuProgram(target, (info,), dram + sram, (task,), 0, 0)


def test_one_tile_energy_and_area_by_hand():
    cost = CostModel(dram_read_pj_per_byte=100.0, dram_write_pj_per_byte=200.0,
                     sram_read_pj_per_byte=2.0, sram_write_pj_per_byte=3.0, vector_pj_per_op=0.5,
                     mac_pj=(("f16", 1.5),), mac_pj_other=9.0, sram_leakage_mw_per_mib=256.0,
                     sram_mm2_per_mib=4.0, mac_mm2=0.01, energy_scale=0.5, area_scale=2.0)
    t = _target(cost)
    p = _one_tile(t)
    r = simulate(p)
    assert r.total_cycles == 98  # test_sim_timing.test_one_tile_by_hand: 0.98 us at 100 MHz
    e = energy(p, r)
    # DRAM: 640 B read at 100 pJ + 256 B written at 200 pJ = 115,200 pJ, halved by energy_scale
    assert e.dram_read_bytes == 640 and e.dram_written_bytes == 256
    assert e.dram_pj == pytest.approx(57_600.0)
    # SRAM: 640 + 256 bytes, each written once and read once: 896 * (2 + 3) / 2
    assert (e.sram_read_bytes, e.sram_written_bytes) == (896, 896)
    assert e.sram_pj == pytest.approx(2240.0)
    # MAC: 8 * 8 * 8 = 512 f16 MACs at 1.5 pJ, halved
    assert e.macs == 512 and e.mac_pj == pytest.approx(384.0)
    assert e.vector_ops == 0 and e.vector_pj == 0.0
    # leakage: 4 KiB = 1/256 MiB at 256 mW/MiB = 1 mW for 0.98 us = 0.98 nJ, halved
    assert e.leakage_pj == pytest.approx(490.0)
    assert e.total_pj == pytest.approx(57_600 + 2240 + 384 + 490)
    a = area(t)
    # 1/256 MiB * 4 mm^2 * 2 and 64 MACs * 0.01 mm^2 * 2
    assert a.sram_mm2 == pytest.approx(1 / 32) and a.mac_mm2 == pytest.approx(1.28)


def test_unlisted_element_type_uses_the_other_figure():
    cost = CostModel(mac_pj=(("f16", 1.5),), mac_pj_other=9.0)
    p = _one_tile(_target(cost), dtype="f64")
    assert energy(p, simulate(p)).mac_pj == pytest.approx(512 * 9.0)


def test_default_figures_are_horowitz_45nm():
    c = load_target().cost
    # Horowitz ISSCC 2014: f32 multiply 3.7 + add 0.9 pJ; 8-bit multiply 0.2 + 32-bit add 0.1
    assert c.mac_energy_pj("f32") == pytest.approx(3.7 + 0.9)
    assert c.mac_energy_pj("i8") == pytest.approx(0.2 + 0.1)
    assert c.dram_read_pj_per_byte == pytest.approx(1300 / 8)  # 1.3 nJ per 64-bit access
    assert c.sram_read_pj_per_byte == pytest.approx(100 / 8)  # 1 MB SRAM, 100 pJ per 64 bits


def test_keys_parse_and_round_trip():
    text = DEFAULT + "\n[energy]\ndram_read_pj_per_byte = 80\n\n[energy.mac_pj]\ni8 = 0.25\n" \
                     "\n[area]\nmac_mm2 = 0.002\n\n[technology]\nenergy_scale = 0.3\n"
    t = parse_target(text, "t.toml")
    assert t.cost.dram_read_pj_per_byte == 80.0 and t.cost.mac_energy_pj("i8") == 0.25
    assert t.cost.mac_energy_pj("f32") == pytest.approx(4.6)  # the other defaults stay
    assert (t.cost.mac_mm2, t.cost.energy_scale) == (0.002, 0.3)
    assert type(t).from_dict(t.to_dict()) == t
    assert "cost" not in load_target().to_dict()  # default costs: the JSON is as before


@pytest.mark.parametrize("tail, key, reason", [
    ("[energy]\ndram_read_pj_per_byte = -1\n", "energy.dram_read_pj_per_byte", "a number in [0, 1e+06]"),
    ("[energy]\nsram_pj = 1\n", "energy.sram_pj", "unknown key"),
    ("[technology]\narea_scale = 0\n", "technology.area_scale", "a number in (0, 100]"),
    ("[energy.mac_pj]\nf33 = 1\n", "energy.mac_pj.f33", "unknown element type"),
    ("[area]\nmac_mm2 = \"big\"\n", "area.mac_mm2", "expected a number"),
])
def test_bad_cost_keys_name_key_and_line(tail, key, reason):
    text = DEFAULT + "\n" + tail
    with pytest.raises(TargetError) as e:
        parse_target(text, "t.toml")
    assert e.value.key == key and reason in e.value.reason
    assert e.value.line == len(text.splitlines())  # the key's own line, the last


def test_summary_reports_energy_by_component_with_units():
    from npu_studio.core.npu.sim.export import energy_lines

    cost = CostModel(dram_read_pj_per_byte=100.0, dram_write_pj_per_byte=200.0,
                     sram_read_pj_per_byte=2.0, sram_write_pj_per_byte=3.0,
                     mac_pj=(("f16", 1.5),), sram_leakage_mw_per_mib=256.0, sram_mm2_per_mib=4.0,
                     mac_mm2=0.01, energy_scale=0.5, area_scale=2.0)
    p = _one_tile(_target(cost))
    # the figures of test_one_tile_energy_and_area_by_hand
    assert energy_lines(p, simulate(p)) == [
        "energy 60.7 nJ: DRAM 57.6 nJ, SRAM 2.24 nJ, MAC 384 pJ, vector 0 pJ, leakage 490 pJ",
        "area 1.31 mm^2: SRAM 0.0312 mm^2, MAC array 1.28 mm^2"]

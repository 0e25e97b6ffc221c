"""npu_isa_spec.h: the instruction set's tables (isa/spec.py) as C, for the plugin's decoder.

Generated when the plugin is built (plugin_build), so the C decoder reads the opcodes, field
kinds and table sizes the assembler writes, and a change to the specification rebuilds the plugin.
"""

from __future__ import annotations

from ..isa import spec

HEADER = "npu_isa_spec.h"
_KIND = {"uint": "u", "addr": "a", "enum": "e", "str": "s", "mask": "m", "engine": "g", "list": "l", "ints": "i"}
_RUNS = ("none", "any", "dma", "mac", "vec", "cpu")


def _name(mnemonic: str) -> str:
    return ("DIR_" if mnemonic.startswith(".") else "") + mnemonic.lstrip(".").replace(".", "_").upper()


def text() -> str:
    width = max(len(op.fields) for op in spec.OPCODES)
    lines = ["/* Generated from npu_studio/core/npu/isa/spec.py by hal/isa_header.py: do not edit. */",
             "#ifndef NPU_ISA_SPEC_H", "#define NPU_ISA_SPEC_H", ""]
    defines = {"VERSION": spec.ISA_VERSION, "HEADER_SIZE": spec.HEADER_SIZE, "RECORD_HEAD": spec.RECORD_HEAD,
               "SECTION_HEAD": spec.SECTION_HEAD, "SECTION_COMPUTE": spec.SECTION_COMPUTE,
               "MAX_OPERANDS": spec.MAX_OPERANDS, "MAX_STRING": spec.MAX_STRING, "MAX_SECTION": spec.MAX_SECTION,
               "NO_TAG": f"{spec.NO_TAG:#x}u", "MAX_DMA": spec.MAX_DMA_CHANNELS, "ENGINE_MAC": spec.ENGINE_MAC,
               "ENGINE_VEC": spec.ENGINE_VEC, "ENGINE_CPU": spec.ENGINE_CPU, "ENGINE_NONE": spec.ENGINE_NONE,
               "FUNCTIONS": len(spec.FUNCTIONS), "MAX_FIELDS": width, "NOPS": len(spec.OPCODES),
               "PLACEMENT_DRAM": spec.ENUMS["placement"].index("dram"),
               "PLACEMENT_SRAM": spec.ENUMS["placement"].index("sram")}
    lines += [f"#define NPU_ISA_{k} {v}" for k, v in defines.items()]
    lines += ["", "enum { " + ", ".join(f"NPU_RUNS_{r.upper()}" for r in _RUNS) + " };",
              "typedef struct {", "  unsigned code;", "  const char *mnemonic;", "  int runs, work, nfields;",
              "  const char *kinds; /* one letter per field: u uint, a addr, e enum, s str, m mask, g engine, "
              "l list, i ints */",
              "  int enum_size[NPU_ISA_MAX_FIELDS]; /* an enum field's table size */", "} npu_isa_op_t;", ""]
    rows = []
    for op in spec.OPCODES:
        kinds = "".join(_KIND[f.kind] for f in op.fields)
        sizes = [len(spec.ENUMS[f.table]) if f.kind == "enum" else 0 for f in op.fields] + [0] * (width - len(op.fields))
        rows.append(f'  {{{op.code:#04x}, "{op.mnemonic}", NPU_RUNS_{op.engines.upper()}, {int(spec.counts_as_work(op))}, '
                    f'{len(op.fields)}, "{kinds}", {{{", ".join(map(str, sizes))}}}}},')
        lines.append(f"#define NPU_OP_{_name(op.mnemonic)} {op.code:#04x}")
        lines += [f"#define NPU_F_{_name(op.mnemonic)}_{f.name.upper()} {i}" for i, f in enumerate(op.fields)]
    lines += ["", "static const npu_isa_op_t NPU_ISA_OPS[NPU_ISA_NOPS] = {", *rows, "};", "", "#endif", ""]
    return "\n".join(lines)

/* The program binary the plugin runs (docs/npu-isa.md): the generic NPU's instructions and, per
 * dispatch, a compute section. npu_isa_spec.h is generated from npu_studio/core/npu/isa/spec.py
 * when the plugin is built (plugin_build.py), so the opcode tables cannot drift from the
 * assembler's. */
#ifndef NPU_ISA_H
#define NPU_ISA_H

#include <stddef.h>

#include "npu_exec.h"
#include "npu_isa_spec.h"

/* Reads and validates the binary at `path` as a whole (header, CRC, strings, every instruction and
 * its addresses, every section), then each described dispatch (npu_exec_verify). NULL with `error`
 * (at least 512 bytes): "PATH: offset N: reason". */
npu_exec_program_t *npu_isa_load(const char *path, char *error);

/* One compute section's payload (`size` bytes at file offset `base`) into `d`; 0 with `why` (at least
 * 256 bytes) and the file offset of the bad word in `bad_at`. */
int npu_section_decode(const unsigned char *payload, size_t size, size_t base, npu_dispatch_desc_t *d, char *why,
                       size_t *bad_at);

#endif /* NPU_ISA_H */

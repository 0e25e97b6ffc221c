/* The executable-plugin ABI of IREE's local CPU HAL, version 0.1, as NPU Studio uses it.
 *
 * Declared here from IREE's documentation of the ABI (the runtime's
 * executable plugin interface): the wheels ship no header, and we do not
 * copy IREE's. Only what a plugin that resolves imports needs is declared.
 * tests/core/npu/hal/test_plugin_abi.py checks these declarations against
 * the runtime: a plugin built from them is loaded by iree-run-module,
 * resolves its import, and the import computes a dispatch's result.
 */
#ifndef NPU_PLUGIN_ABI_H
#define NPU_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#define NPU_ABI_VERSION_0_1 0x00000001u
#define NPU_ABI_QUERY_SYMBOL iree_hal_executable_plugin_query

/* Status: 0 is OK; otherwise a status code (5 = not found, 3 = invalid argument, 13 = internal). */
typedef uintptr_t npu_abi_status_t;
#define NPU_ABI_OK ((npu_abi_status_t)0)
#define NPU_ABI_INVALID_ARGUMENT ((npu_abi_status_t)3)
#define NPU_ABI_NOT_FOUND ((npu_abi_status_t)5)

/* Every plugin version starts with this header. */
typedef struct {
  uint32_t version;
  const char *name;
  const char *description;
  uint32_t features;  /* bit 0: standalone (no system calls); we make system calls: 0 */
  int32_t sanitizer;  /* 0: none */
  uint64_t reserved[8];
} npu_abi_header_t;

typedef struct {
  void *self;
  npu_abi_status_t (*ctl)(void *self, int command, const void *params, void **inout_ptr);
} npu_abi_allocator_t;

typedef struct {
  npu_abi_allocator_t host_allocator;
} npu_abi_environment_t;

typedef struct {
  const char *data;
  size_t size;
} npu_abi_string_view_t;

typedef struct {
  npu_abi_string_view_t key;
  npu_abi_string_view_t value;
} npu_abi_string_pair_t;

/* Names arrive sorted; a leading '?' marks an optional import. Entries already set are left alone. */
typedef struct {
  size_t count;
  const char *const *symbol_names;
  void **out_fn_ptrs;
  void **out_fn_contexts;
} npu_abi_resolve_params_t;

#define NPU_ABI_RESOLUTION_MISSING_OPTIONAL 1u

typedef struct {
  const npu_abi_header_t *header;
  npu_abi_status_t (*load)(const npu_abi_environment_t *environment, size_t param_count,
                           const npu_abi_string_pair_t *params, void **out_self);
  void (*unload)(void *self);
  npu_abi_status_t (*resolve)(void *self, const npu_abi_resolve_params_t *params,
                              uint32_t *out_resolution);
} npu_abi_plugin_v0_t;

/* An import: `params` points at the packed arguments of the executable's call
 * (for a `memref<i8>, index` pair under `llvm.bareptr`: a base pointer then an
 * offset, 8 bytes each on 64-bit hosts); `context` is what resolve stored.
 * Returns 0 on success; anything else fails the dispatch. */
typedef int (*npu_abi_import_fn_t)(void *params, void *context, void *reserved);

#if defined(_WIN32)
#define NPU_ABI_EXPORT __declspec(dllexport)
#else
#define NPU_ABI_EXPORT __attribute__((visibility("default")))
#endif

#endif /* NPU_PLUGIN_ABI_H */

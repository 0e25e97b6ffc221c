/* A plugin built from npu_plugin_abi.h alone, for tests/core/npu/hal/test_plugin_abi.py.
 *
 * Its import npu_dispatch_0 computes y = a + b for the test's 2x8 f32 Add,
 * reading what the replacement executable passes (the binding count, then a
 * (base, offset, bytes) triple per binding),
 * and checks that the runtime hands back the context resolve stored.
 */
#include "npu_plugin_abi.h"

static int probe_marker;

static int add_2x8(void *params, void *context, void *reserved) {
  (void)reserved;
  if (context != &probe_marker) return 1;
  uint64_t *p = (uint64_t *)params;
  if (p[0] != 3 || p[3] != 64 || p[6] != 64 || p[9] != 64) return 1; /* three 2x8 f32 bindings */
  const float *a = (const float *)(uintptr_t)(p[1] + p[2]);
  const float *b = (const float *)(uintptr_t)(p[4] + p[5]);
  float *y = (float *)(uintptr_t)(p[7] + p[8]);
  for (int i = 0; i < 16; ++i) y[i] = a[i] + b[i];
  return 0;
}

static npu_abi_status_t probe_load(const npu_abi_environment_t *env, size_t n, const npu_abi_string_pair_t *params,
                                   void **out_self) {
  (void)env, (void)n, (void)params;
  *out_self = &probe_marker;
  return NPU_ABI_OK;
}

static void probe_unload(void *self) { (void)self; }

static npu_abi_status_t probe_resolve(void *self, const npu_abi_resolve_params_t *params, uint32_t *out_resolution) {
  *out_resolution = 0;
  npu_abi_status_t status = NPU_ABI_OK;
  for (size_t i = 0; i < params->count; ++i) {
    const char *name = params->symbol_names[i];
    const char *want = "npu_dispatch_0";
    while (*name && *name == *want) ++name, ++want;
    if (*name == '\0' && *want == '\0') {
      params->out_fn_ptrs[i] = (void *)(npu_abi_import_fn_t)add_2x8;
      params->out_fn_contexts[i] = self;
    } else {
      status = NPU_ABI_NOT_FOUND;
    }
  }
  return status;
}

NPU_ABI_EXPORT const npu_abi_header_t **NPU_ABI_QUERY_SYMBOL(uint32_t max_version, void *reserved) {
  (void)reserved;
  static const npu_abi_header_t header = {.version = NPU_ABI_VERSION_0_1, .name = "abi_probe",
                                          .description = "NPU Studio ABI probe"};
  static const npu_abi_plugin_v0_t plugin = {&header, probe_load, probe_unload, probe_resolve};
  return max_version >= NPU_ABI_VERSION_0_1 ? (const npu_abi_header_t **)&plugin : NULL;
}

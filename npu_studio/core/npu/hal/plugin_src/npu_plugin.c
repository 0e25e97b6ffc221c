/* NPU Studio's executable plugin: the NPU behind IREE's local CPU HAL.
 *
 * The NPU build variant replaces each NPU dispatch's executable with one that
 * calls the import `npu_dispatch_<N>` (N: the dispatch's index in the NPU
 * program) once, with the dispatch's bindings as (base, offset) pairs in the
 * order of the flow dispatch's arguments. This plugin resolves every such
 * import to one entry that hands the call to the NPU model:
 *
 *   in-process: a handler registered with npu_plugin_set_handler (the
 *     functional simulator, through ctypes) computes the dispatch tile by
 *     tile on the real buffers.
 *
 * A call with no handler fails the dispatch with a line on stderr.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "npu_plugin_abi.h"

#define IMPORT_PREFIX "npu_dispatch_"

typedef int (*npu_handler_fn_t)(int64_t dispatch, void *params);

static _Atomic(npu_handler_fn_t) g_handler = NULL;
static atomic_long g_calls = 0;

/* Registers the in-process handler (NULL: none). */
NPU_ABI_EXPORT void npu_plugin_set_handler(npu_handler_fn_t handler) { atomic_store(&g_handler, handler); }

/* How many NPU dispatches ran through the plugin since it was loaded. */
NPU_ABI_EXPORT long npu_plugin_calls(void) { return atomic_load(&g_calls); }

static int npu_dispatch(void *params, void *context, void *reserved) {
  (void)reserved;
  int64_t dispatch = (int64_t)(intptr_t)context;
  atomic_fetch_add(&g_calls, 1);
  npu_handler_fn_t handler = atomic_load(&g_handler);
  if (handler != NULL) return handler(dispatch, params);
  fprintf(stderr, "npu plugin: dispatch #%lld: no NPU model attached (run it with npu-studio run --npu)\n",
          (long long)dispatch);
  return 1;
}

/* The dispatch index in `npu_dispatch_<N>`, or -1 for any other name. */
static long dispatch_of(const char *name) {
  size_t n = strlen(IMPORT_PREFIX);
  if (strncmp(name, IMPORT_PREFIX, n) != 0 || name[n] == '\0') return -1;
  long value = 0;
  for (const char *p = name + n; *p; ++p) {
    if (*p < '0' || *p > '9' || value > 100000000L) return -1;
    value = value * 10 + (*p - '0');
  }
  return value;
}

static npu_abi_status_t plugin_load(const npu_abi_environment_t *environment, size_t param_count,
                                    const npu_abi_string_pair_t *params, void **out_self) {
  (void)environment, (void)param_count, (void)params;
  *out_self = NULL; /* no state: the handler and the counter are process-wide */
  return NPU_ABI_OK;
}

static void plugin_unload(void *self) { (void)self; }

static npu_abi_status_t plugin_resolve(void *self, const npu_abi_resolve_params_t *params,
                                       uint32_t *out_resolution) {
  (void)self;
  *out_resolution = 0;
  int missing = 0;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i] != NULL) continue;
    const char *name = params->symbol_names[i];
    int optional = name[0] == '?';
    long dispatch = dispatch_of(optional ? name + 1 : name);
    if (dispatch >= 0) {
      params->out_fn_ptrs[i] = (void *)(npu_abi_import_fn_t)npu_dispatch;
      params->out_fn_contexts[i] = (void *)(intptr_t)dispatch;
    } else if (optional) {
      *out_resolution |= NPU_ABI_RESOLUTION_MISSING_OPTIONAL;
    } else {
      missing = 1; /* another plugin or provider may have it */
    }
  }
  return missing ? NPU_ABI_NOT_FOUND : NPU_ABI_OK;
}

NPU_ABI_EXPORT const npu_abi_header_t **NPU_ABI_QUERY_SYMBOL(uint32_t max_version, void *reserved) {
  (void)reserved;
  static const npu_abi_header_t header = {
      .version = NPU_ABI_VERSION_0_1,
      .name = "npu_studio",
      .description = "NPU Studio: NPU dispatches handed to the NPU model",
      .features = 0,
      .sanitizer = 0,
  };
  static const npu_abi_plugin_v0_t plugin = {
      .header = &header, .load = plugin_load, .unload = plugin_unload, .resolve = plugin_resolve};
  return max_version >= NPU_ABI_VERSION_0_1 ? (const npu_abi_header_t **)&plugin : NULL;
}

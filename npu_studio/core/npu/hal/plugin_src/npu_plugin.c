/* NPU Studio's executable plugin: the NPU behind IREE's local CPU HAL.
 *
 * The NPU build variant replaces each NPU dispatch's executable with one that
 * calls the import `npu_dispatch_<N>` (N: the dispatch's index in the NPU
 * program) once, with the number of bindings, then each binding as a (base,
 * offset, bytes) triple in the order of the flow dispatch's arguments (bytes:
 * the size the executable views it with). This plugin resolves every such
 * import to one entry that hands the call to the NPU model:
 *
 *   in-process: a handler registered with npu_plugin_set_handler (the
 *     functional simulator, through ctypes) computes the dispatch tile by
 *     tile on the real buffers.
 *
 *   standalone (iree-run-module, iree-benchmark-module): with no handler,
 *     the C interpreter (npu_exec.c) runs the dispatch from the program
 *     binary named by $NPU_STUDIO_NPU_EXEC, read and validated as a whole on
 *     the first call (npu_isa_decode.c, npu_exec_verify.c); each call's
 *     bindings must then have exactly the sizes its compute section gives them.
 *     $NPU_STUDIO_NPU_LOG (a file) gets a line (call, dispatch, "begin") as a
 *     call starts and one (call, dispatch, tiles, seconds) when it ends; $NPU_STUDIO_NPU_DUMP (a folder) keeps each call's
 *     bindings before and after it for the per-dispatch check; $NPU_STUDIO_NPU_FAULT
 *     ("DISPATCH:TILE:DELTA") perturbs one tile's output, "DISPATCH:hang" never returns (tests).
 *
 * A call that cannot be computed fails the dispatch with one line on stderr
 * naming it.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "npu_exec.h"
#include "npu_isa.h"
#include "npu_plugin_abi.h"

#define IMPORT_PREFIX "npu_dispatch_"

typedef int (*npu_handler_fn_t)(int64_t dispatch, void *params);

static _Atomic(npu_handler_fn_t) g_handler = NULL;
static atomic_long g_calls = 0;

/* Registers the in-process handler (NULL: none). */
NPU_ABI_EXPORT void npu_plugin_set_handler(npu_handler_fn_t handler) { atomic_store(&g_handler, handler); }

/* How many NPU dispatches ran through the plugin since it was loaded. */
NPU_ABI_EXPORT long npu_plugin_calls(void) { return atomic_load(&g_calls); }

/* The standalone NPU model: one description, one dispatch at a time (the NPU runs one). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static npu_exec_program_t *g_program = NULL;
static char g_load_error[512] = "";
static long g_standalone_calls = 0;
static unsigned char *g_bindings[NPU_MAX_BINDINGS]; /* under g_lock */
static char g_call_error[512];

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void dump_bindings(const char *dir, long call, const npu_dispatch_desc_t *d, unsigned char **bindings,
                          const char *when) {
  char path[4096];
  for (int k = 0; k < d->nbindings; ++k) {
    snprintf(path, sizeof(path), "%s/%ld.%s%d.bin", dir, call, when, k);
    FILE *f = fopen(path, "wb");
    if (!f) continue; /* the Python side reports a missing dump */
    fwrite(bindings[k], npu_elem_size(d->values[k].elem), (size_t)d->values[k].count, f);
    fclose(f);
  }
}

/* The call's bindings, if IREE passed as many as `d` describes, each of the size it describes. */
static int take_bindings(const npu_dispatch_desc_t *d, const uint64_t *words, unsigned char **bindings,
                         const char *path, char *error) {
  if (words[0] != (uint64_t)d->nbindings) {
    snprintf(error, 512, "%s: dispatch #%lld.bindings: %d, but IREE passes %llu", path, (long long)d->dispatch,
             d->nbindings, (unsigned long long)words[0]);
    return 1;
  }
  for (int k = 0; k < d->nbindings; ++k) {
    const uint64_t *b = &words[1 + 3 * k];
    uint64_t want = (uint64_t)npu_value_bytes(d, k), passed = b[2];
    if (want != passed && !(want == 0 && passed == 1)) { /* an empty binding is viewed as 1 byte */
      snprintf(error, 512, "%s: dispatch #%lld.values[%d]: %llu bytes, but IREE's buffer holds %llu", path,
               (long long)d->dispatch, k, (unsigned long long)want, (unsigned long long)passed);
      return 1;
    }
    bindings[k] = (unsigned char *)(uintptr_t)(b[0] + b[1]);
  }
  return 0;
}

static int standalone(int64_t dispatch, void *params) {
  int rc = 1;
  pthread_mutex_lock(&g_lock);
  const char *path = getenv("NPU_STUDIO_NPU_EXEC");
  if (g_program == NULL && g_load_error[0] == '\0') {
    if (path == NULL || path[0] == '\0')
      snprintf(g_load_error, sizeof(g_load_error), "no NPU model attached: set NPU_STUDIO_NPU_EXEC to a workspace's "
               "npu/hal/npu_program.npub (npu-studio run --npu --standalone does)");
    else
      g_program = npu_isa_load(path, g_load_error);
  }
  const npu_dispatch_desc_t *d = npu_exec_find(g_program, dispatch);
  if (g_program == NULL) {
    fprintf(stderr, "npu plugin: dispatch #%lld: %s\n", (long long)dispatch, g_load_error);
  } else if (d == NULL) {
    fprintf(stderr, "npu plugin: dispatch #%lld: not in %s\n", (long long)dispatch, path ? path : "?");
  } else if (d->reason[0] == '\0' && take_bindings(d, (const uint64_t *)params, g_bindings, path, g_call_error)) {
    fprintf(stderr, "npu plugin: dispatch #%lld %s: %s\n", (long long)dispatch, d->symbol, g_call_error);
  } else {
    unsigned char **bindings = g_bindings;
    npu_fault_t fault, *fp = NULL;
    const char *spec = getenv("NPU_STUDIO_NPU_FAULT");
    if (spec && sscanf(spec, "%lld:%lld:%lf", (long long *)&fault.dispatch, (long long *)&fault.tile, &fault.delta) == 3)
      fp = &fault;
    const char *dump = getenv("NPU_STUDIO_NPU_DUMP");
    long call = g_standalone_calls++;
    if (dump && dump[0]) dump_bindings(dump, call, d, bindings, "pre");
    const char *log = getenv("NPU_STUDIO_NPU_LOG");
    FILE *begin = log && log[0] ? fopen(log, "a") : NULL;
    if (begin) { /* the caller's time-out names the dispatch still running */
      fprintf(begin, "%ld\t%lld\tbegin\n", call, (long long)dispatch);
      fclose(begin);
    }
    long long hang;
    char word[5];
    if (spec && sscanf(spec, "%lld:%4[a-z]", &hang, word) == 2 && strcmp(word, "hang") == 0 && hang == dispatch)
      for (;;) pause(); /* fault "DISPATCH:hang" (tests): a call that never returns */
    char error[512];
    double t0 = now_seconds();
    rc = npu_exec_run(d, bindings, fp, error);
    double seconds = now_seconds() - t0;
    if (rc != 0) {
      fprintf(stderr, "npu plugin: dispatch #%lld %s: %s: %s\n", (long long)dispatch, d->symbol, path, error);
    } else {
      if (dump && dump[0]) dump_bindings(dump, call, d, bindings, "post");
      FILE *f = log && log[0] ? fopen(log, "a") : NULL;
      if (f) {
        fprintf(f, "%ld\t%lld\t%d\t%.9f\n", call, (long long)dispatch, d->ntiles, seconds);
        fclose(f);
      }
    }
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static int npu_dispatch(void *params, void *context, void *reserved) {
  (void)reserved;
  int64_t dispatch = (int64_t)(intptr_t)context;
  atomic_fetch_add(&g_calls, 1);
  npu_handler_fn_t handler = atomic_load(&g_handler);
  if (handler != NULL) return handler(dispatch, params);
  return standalone(dispatch, params);
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

static void plugin_unload(void *self) {
  (void)self;
  pthread_mutex_lock(&g_lock);
  npu_exec_free(g_program);
  g_program = NULL, g_load_error[0] = '\0';
  pthread_mutex_unlock(&g_lock);
}

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

/* Calls the NPU plugin's standalone model as IREE's runtime does, for test_exec_mutations.py.
 *
 *   exec_harness PLUGIN.so DISPATCH:BYTES,BYTES,... [DISPATCH:BYTES,...]...
 *
 * Loads the plugin through its query symbol, resolves `npu_dispatch_<DISPATCH>`
 * and calls it once per argument, in order, with the binding count and one
 * (base, offset, bytes) triple per binding, as the replacement executable
 * does. Each binding is its own allocation of exactly BYTES (zeros), so a
 * sanitizer build reports any access outside it. The description comes from
 * $NPU_STUDIO_NPU_EXEC as in iree-run-module. Prints OK and exits 0 when every
 * call succeeds; exits 1 when one fails (the plugin printed why); 2 on bad usage.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_plugin_abi.h"

typedef const npu_abi_header_t **(*query_fn_t)(uint32_t, void *);

static int call(const npu_abi_plugin_v0_t *plugin, void *self, char *spec) {
  char *colon = strchr(spec, ':');
  if (!colon) return 2;
  *colon = '\0';
  char name[64];
  snprintf(name, sizeof(name), "npu_dispatch_%s", spec);
  const char *names[1] = {name};
  void *fn = NULL, *context = NULL;
  npu_abi_resolve_params_t resolve = {1, names, &fn, &context};
  uint32_t resolution = 0;
  if (plugin->resolve(self, &resolve, &resolution) != NPU_ABI_OK || !fn) return 2;
  uint64_t words[1 + 3 * 256] = {0};
  unsigned char *buffers[256];
  int n = 0;
  for (char *tok = strtok(colon + 1, ","); tok && n < 256; tok = strtok(NULL, ","), ++n) {
    size_t bytes = strtoull(tok, NULL, 10);
    buffers[n] = calloc(bytes ? bytes : 1, 1);
    words[1 + 3 * n] = (uint64_t)(uintptr_t)buffers[n], words[2 + 3 * n] = 0, words[3 + 3 * n] = bytes ? bytes : 1;
  }
  words[0] = (uint64_t)n;
  int rc = ((npu_abi_import_fn_t)fn)(words, context, NULL);
  for (int k = 0; k < n; ++k) free(buffers[k]);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  query_fn_t query = lib ? (query_fn_t)dlsym(lib, "iree_hal_executable_plugin_query") : NULL;
  if (!query) {
    fprintf(stderr, "exec_harness: cannot load %s\n", argv[1]);
    return 2;
  }
  const npu_abi_plugin_v0_t *plugin = (const npu_abi_plugin_v0_t *)query(NPU_ABI_VERSION_0_1, NULL);
  void *self = NULL;
  if (!plugin || plugin->load(NULL, 0, NULL, &self) != NPU_ABI_OK) return 2;
  int rc = 0;
  for (int i = 2; i < argc && rc == 0; ++i) rc = call(plugin, self, argv[i]);
  plugin->unload(self);
  if (rc == 0) printf("OK\n");
  return rc;
}

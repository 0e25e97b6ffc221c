/* A small JSON reader for the NPU execution description (npu_exec.json).
 *
 * The whole document becomes a tree of `npu_json_t` nodes held in one
 * arena; lookups never fail with a crash: a missing key or a wrong kind
 * gives NULL (or the caller's default), and the caller reports the key.
 */
#ifndef NPU_JSON_H
#define NPU_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum { NPU_JSON_NULL, NPU_JSON_BOOL, NPU_JSON_NUMBER, NPU_JSON_STRING, NPU_JSON_ARRAY, NPU_JSON_OBJECT } npu_json_kind_t;

typedef struct npu_json {
  npu_json_kind_t kind;
  double number;
  int64_t integer;  /* exact for integers written without a fraction or exponent */
  int is_integer;
  const char *string;  /* NUL-terminated, unescaped */
  size_t count;        /* array items or object members */
  struct npu_json *items;
  const char **keys;   /* object member names */
} npu_json_t;

/* Parses `text` (`size` bytes). NULL on a syntax error, with `error` (at least 160 bytes) saying where. */
npu_json_t *npu_json_parse(const char *text, size_t size, char *error);
void npu_json_free(npu_json_t *root);

const npu_json_t *npu_json_get(const npu_json_t *object, const char *key);
const npu_json_t *npu_json_at(const npu_json_t *array, size_t index);

#endif /* NPU_JSON_H */

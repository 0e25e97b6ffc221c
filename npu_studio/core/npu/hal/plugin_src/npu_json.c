/* A small JSON reader (see npu_json.h). Recursive descent, depth bounded. */
#include "npu_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct {
  const char *p, *end, *start;
  char *error;
  /* every allocation of the tree, freed together */
  void **blocks;
  size_t n_blocks, cap_blocks;
} parser_t;

typedef struct {
  void **blocks;
  size_t n_blocks;
} arena_t;

static void *alloc(parser_t *ps, size_t size) {
  if (ps->n_blocks == ps->cap_blocks) {
    size_t cap = ps->cap_blocks ? 2 * ps->cap_blocks : 256;
    void **grown = realloc(ps->blocks, cap * sizeof(void *));
    if (!grown) return NULL;
    ps->blocks = grown, ps->cap_blocks = cap;
  }
  void *block = calloc(1, size ? size : 1);
  if (block) ps->blocks[ps->n_blocks++] = block;
  return block;
}

static int fail(parser_t *ps, const char *what) {
  if (ps->error[0] == '\0') snprintf(ps->error, 160, "%s at byte %ld", what, (long)(ps->p - ps->start));
  return 0;
}

static void skip_space(parser_t *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) ps->p++;
}

static int parse_value(parser_t *ps, npu_json_t *out, int depth);

static int parse_string(parser_t *ps, const char **out) {
  ps->p++; /* the opening quote */
  const char *s = ps->p;
  size_t n = 0;
  while (ps->p < ps->end && *ps->p != '"') {
    if (*ps->p == '\\') ps->p++;
    ps->p++, n++;
  }
  if (ps->p >= ps->end) return fail(ps, "unterminated string");
  char *buf = alloc(ps, n + 1);
  if (!buf) return fail(ps, "out of memory");
  size_t k = 0;
  for (const char *q = s; q < ps->p; ++q) {
    if (*q != '\\') {
      buf[k++] = *q;
      continue;
    }
    ++q;
    switch (*q) {
      case 'n': buf[k++] = '\n'; break;
      case 't': buf[k++] = '\t'; break;
      case 'r': buf[k++] = '\r'; break;
      case 'b': buf[k++] = '\b'; break;
      case 'f': buf[k++] = '\f'; break;
      case 'u': /* names we read are ASCII; keep a placeholder for anything else */
        buf[k++] = '?';
        q += (ps->p - q >= 5) ? 4 : 0;
        break;
      default: buf[k++] = *q;
    }
  }
  buf[k] = '\0';
  ps->p++; /* the closing quote */
  *out = buf;
  return 1;
}

static int parse_number(parser_t *ps, npu_json_t *out) {
  char tmp[64];
  size_t n = 0;
  int integer = 1;
  while (ps->p < ps->end && n < sizeof(tmp) - 1 && *ps->p && strchr("+-0123456789.eE", *ps->p)) {
    if (strchr(".eE", *ps->p)) integer = 0;
    tmp[n++] = *ps->p++;
  }
  tmp[n] = '\0';
  char *stop;
  errno = 0;
  out->kind = NPU_JSON_NUMBER;
  out->number = strtod(tmp, &stop);
  if (n == 0 || *stop != '\0') return fail(ps, "bad number");
  if (integer) {
    errno = 0;
    out->integer = strtoll(tmp, &stop, 10);
    out->is_integer = errno == 0;
  }
  return 1;
}

static int parse_items(parser_t *ps, npu_json_t *out, int depth, int object) {
  char close = object ? '}' : ']';
  ps->p++;
  size_t cap = 8, n = 0;
  npu_json_t *items = malloc(cap * sizeof(npu_json_t));
  const char **keys = object ? malloc(cap * sizeof(char *)) : NULL;
  int ok = items && (!object || keys);
  skip_space(ps);
  if (ok && ps->p < ps->end && *ps->p == close) {
    ps->p++;
  } else {
    while (ok) {
      if (n == cap) {
        cap *= 2;
        npu_json_t *gi = realloc(items, cap * sizeof(npu_json_t));
        if (gi) items = gi;
        const char **gk = object ? realloc(keys, cap * sizeof(char *)) : NULL;
        if (gk) keys = gk;
        if (!gi || (object && !gk)) { ok = fail(ps, "out of memory"); break; }
      }
      memset(&items[n], 0, sizeof(npu_json_t));
      skip_space(ps);
      if (object) {
        if (ps->p >= ps->end || *ps->p != '"') { ok = fail(ps, "expected a key"); break; }
        if (!parse_string(ps, &keys[n])) { ok = 0; break; }
        skip_space(ps);
        if (ps->p >= ps->end || *ps->p != ':') { ok = fail(ps, "expected ':'"); break; }
        ps->p++;
      }
      if (!parse_value(ps, &items[n], depth + 1)) { ok = 0; break; }
      n++;
      skip_space(ps);
      if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
      if (ps->p < ps->end && *ps->p == close) { ps->p++; break; }
      ok = fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  /* the item arrays move into the arena so one free releases everything */
  npu_json_t *kept_items = alloc(ps, n * sizeof(npu_json_t));
  const char **kept_keys = object ? alloc(ps, n * sizeof(char *)) : NULL;
  if (ok && (!kept_items || (object && !kept_keys))) ok = fail(ps, "out of memory");
  if (ok) {
    memcpy(kept_items, items, n * sizeof(npu_json_t));
    if (object) memcpy(kept_keys, keys, n * sizeof(char *));
  }
  free(items);
  free(keys);
  out->kind = object ? NPU_JSON_OBJECT : NPU_JSON_ARRAY;
  out->items = kept_items, out->keys = kept_keys, out->count = ok ? n : 0;
  return ok;
}

static int literal(parser_t *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || strncmp(ps->p, word, n) != 0) return 0;
  ps->p += n;
  return 1;
}

static int parse_value(parser_t *ps, npu_json_t *out, int depth) {
  if (depth > MAX_DEPTH) return fail(ps, "nested too deeply");
  skip_space(ps);
  if (ps->p >= ps->end) return fail(ps, "unexpected end");
  char c = *ps->p;
  if (c == '{') return parse_items(ps, out, depth, 1);
  if (c == '[') return parse_items(ps, out, depth, 0);
  if (c == '"') {
    out->kind = NPU_JSON_STRING;
    return parse_string(ps, &out->string);
  }
  if (literal(ps, "true")) { out->kind = NPU_JSON_BOOL, out->integer = 1, out->number = 1; return 1; }
  if (literal(ps, "false")) { out->kind = NPU_JSON_BOOL; return 1; }
  if (literal(ps, "null")) { out->kind = NPU_JSON_NULL; return 1; }
  return parse_number(ps, out);
}

npu_json_t *npu_json_parse(const char *text, size_t size, char *error) {
  parser_t ps = {text, text + size, text, error, NULL, 0, 0};
  error[0] = '\0';
  npu_json_t *root = alloc(&ps, sizeof(npu_json_t) + sizeof(arena_t));
  int ok = root && parse_value(&ps, root, 0);
  if (ok) {
    skip_space(&ps);
    if (ps.p != ps.end) ok = fail(&ps, "trailing characters");
  }
  if (!ok) {
    if (!root) fail(&ps, "out of memory");
    for (size_t i = 0; i < ps.n_blocks; ++i) free(ps.blocks[i]);
    free(ps.blocks);
    return NULL;
  }
  arena_t *arena = (arena_t *)(root + 1); /* kept behind the root node */
  arena->blocks = ps.blocks, arena->n_blocks = ps.n_blocks;
  return root;
}

void npu_json_free(npu_json_t *root) {
  if (!root) return;
  arena_t arena = *(arena_t *)(root + 1);
  for (size_t i = 0; i < arena.n_blocks; ++i) free(arena.blocks[i]); /* the root is blocks[0] */
  free(arena.blocks);
}

const npu_json_t *npu_json_get(const npu_json_t *object, const char *key) {
  if (!object || object->kind != NPU_JSON_OBJECT) return NULL;
  for (size_t i = 0; i < object->count; ++i)
    if (strcmp(object->keys[i], key) == 0) return &object->items[i];
  return NULL;
}

const npu_json_t *npu_json_at(const npu_json_t *array, size_t index) {
  if (!array || array->kind != NPU_JSON_ARRAY || index >= array->count) return NULL;
  return &array->items[index];
}

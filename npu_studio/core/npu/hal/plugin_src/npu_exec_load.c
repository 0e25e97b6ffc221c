/* Reading npu_exec.json into npu_exec_program_t, every index and size checked (see npu_exec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_exec.h"
#include "npu_json.h"

#define FORMAT "npu-studio.npu-exec"
#define VERSION 1

typedef struct {
  const char *path;
  char *error;
  char where[128];
} ctx_t;

static int bad(ctx_t *c, const char *key, const char *why) {
  snprintf(c->error, 512, "%s: %s%s%s: %s", c->path, c->where, c->where[0] ? "." : "", key, why);
  return 0;
}

/* An integer as Python's reader takes it: a JSON number without fraction or exponent, exact in a
 * double (|v| <= 2^53); true and false are not integers. */
static int json_int(const npu_json_t *v, int64_t *out) {
  if (!v || v->kind != NPU_JSON_NUMBER || !v->is_integer) return 0;
  if (v->integer < -NPU_MAX_JSON_INT || v->integer > NPU_MAX_JSON_INT) return 0;
  *out = v->integer;
  return 1;
}

static int get_int(ctx_t *c, const npu_json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   int64_t fallback) {
  const npu_json_t *v = npu_json_get(obj, key);
  if (!v) { *out = fallback; return 1; }
  if (!json_int(v, out)) return bad(c, key, "expected an integer (at most 2^53, not a boolean)");
  if (*out < lo || *out > hi) return bad(c, key, "out of range");
  return 1;
}

static int get_bool(ctx_t *c, const npu_json_t *obj, const char *key, int *out) {
  const npu_json_t *v = npu_json_get(obj, key);
  *out = 0;
  if (!v) return 1;
  if (v->kind != NPU_JSON_BOOL) return bad(c, key, "expected true or false");
  *out = v->integer != 0;
  return 1;
}

static const npu_json_t *get_array(ctx_t *c, const npu_json_t *obj, const char *key, size_t max) {
  const npu_json_t *v = npu_json_get(obj, key);
  static const npu_json_t empty = {NPU_JSON_ARRAY, 0, 0, 0, NULL, 0, NULL, NULL};
  if (!v) return &empty;
  if (v->kind != NPU_JSON_ARRAY) { bad(c, key, "expected an array"); return NULL; }
  if (v->count > max) { bad(c, key, "too many items"); return NULL; }
  return v;
}

static int int_list(ctx_t *c, const npu_json_t *obj, const char *key, size_t max, int64_t lo, int64_t hi,
                    int64_t *out, int *n) {
  const npu_json_t *a = get_array(c, obj, key, max);
  if (!a) return 0;
  for (size_t i = 0; i < a->count; ++i)
    if (!json_int(&a->items[i], &out[i]) || out[i] < lo || out[i] > hi)
      return bad(c, key, "expected integers in range (not booleans)");
  *n = (int)a->count;
  return 1;
}

static int int_array(ctx_t *c, const npu_json_t *obj, const char *key, size_t max, int64_t lo, int64_t hi,
                     int **out, int *n) {
  const npu_json_t *a = get_array(c, obj, key, max);
  if (!a) return 0;
  int64_t *tmp = calloc(a->count + 1, sizeof(int64_t));
  *out = calloc(a->count + 1, sizeof(int));
  if (!tmp || !*out) { free(tmp); return bad(c, key, "out of memory"); }
  int ok = int_list(c, obj, key, max, lo, hi, tmp, n);
  for (int i = 0; ok && i < *n; ++i) (*out)[i] = (int)tmp[i];
  free(tmp);
  return ok;
}

static int elem_of(const char *name, npu_elem_t *out) {
  static const char *const names[] = {"f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64", "index"};
  static const npu_elem_t elems[] = {E_F16, E_BF16, E_F32, E_F64, E_I1, E_I8, E_I16, E_I32, E_I64, E_I64};
  for (int k = 0; k < 10; ++k)
    if (name && strcmp(name, names[k]) == 0) return *out = elems[k], 1;
  return 0;
}

static const char *get_string(const npu_json_t *obj, const char *key) {
  const npu_json_t *v = npu_json_get(obj, key);
  return v && v->kind == NPU_JSON_STRING ? v->string : NULL;
}

static int b64(const char *s, unsigned char **out, size_t *size) {
  size_t n = strlen(s);
  *out = malloc(n / 4 * 3 + 3);
  if (!*out) return 0;
  size_t k = 0;
  uint32_t acc = 0;
  int bitsn = 0;
  for (const char *p = s; *p && *p != '='; ++p) {
    const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *hit = strchr(alphabet, *p);
    if (!hit) return 0;
    acc = (acc << 6) | (uint32_t)(hit - alphabet);
    bitsn += 6;
    if (bitsn >= 8) bitsn -= 8, (*out)[k++] = (unsigned char)(acc >> bitsn);
  }
  *size = k;
  return 1;
}

static int load_body(ctx_t *c, const npu_json_t *op, npu_fop_t *f, int nvalues) {
  const npu_json_t *body = get_array(c, op, "body", 4096);
  if (!body) return 0;
  f->nbody = (int)body->count;
  f->body = calloc(body->count + 1, sizeof(npu_body_op_t));
  if (!f->body) return bad(c, "body", "out of memory");
  int base = f->nargs; /* the block's arguments (one per operand), then the body's values */
  char outer_where[128];
  memcpy(outer_where, c->where, sizeof(outer_where));
  for (int k = 0; k < f->nbody; ++k) {
    const npu_json_t *b = &body->items[k];
    npu_body_op_t *o = &f->body[k];
    snprintf(c->where, sizeof(c->where), "%.100s.body[%d]", outer_where, k);
    const char *name = get_string(b, "op"), *type = get_string(b, "type"), *mode = get_string(b, "round");
    if (!name || !type) return bad(c, "body", "op and type required");
    o->op = npu_body_opcode(name);
    if (o->op < 0) return bad(c, "body", name);
    if (!elem_of(type, &o->type)) return bad(c, "body", type);
    int64_t args[NPU_MAX_RANK];
    if (!int_list(c, b, "args", NPU_MAX_RANK, 0, base + k - 1, args, &o->nargs)) return 0;
    for (int i = 0; i < o->nargs; ++i) o->args[i] = (int)args[i];
    if (!get_int(c, b, "attr", -1, (int64_t)1 << 40, &o->attr, 0)) return 0;
    if (!get_int(c, b, "i", INT64_MIN, INT64_MAX, &o->i, 0)) return 0;
    if (!get_bool(c, b, "saturate", &o->saturate)) return 0;
    const char *hexf = get_string(b, "f"); /* a float constant, exact: C's hex float, inf or nan */
    if (hexf && hexf[0]) {
      char *stop;
      o->f = strtod(hexf, &stop);
      if (*stop) return bad(c, "body", "a float constant that is not a hex float");
    }
    o->round = !mode || !mode[0] ? 0 : strcmp(mode, "half-away") == 0 ? 2 : strcmp(mode, "truncate") == 0 ? 3 : 1;
    int reads = o->op == 3 || o->op == npu_body_opcode("extract");
    if (reads && (o->attr < 0 || o->attr >= nvalues)) return bad(c, "attr", "outer value out of range");
    if (o->op == 2 && (o->attr < 0 || o->attr >= f->n_loops)) return bad(c, "attr", "index loop out of range");
    int arity = npu_body_arity(o->op);
    if (arity >= 0 && o->nargs != arity) return bad(c, "args", "the op's semantics read another number of arguments");
  }
  memcpy(c->where, outer_where, sizeof(outer_where));
  return int_array(c, op, "yields", 64, 0, base + f->nbody - 1, &f->yields, &f->nyields);
}

static int load_op(ctx_t *c, const npu_json_t *op, npu_fop_t *f, const npu_dispatch_desc_t *d) {
  static const char *const kinds[] = {"load", "store", "empty", "const", "reshape", "extract_slice",
                                      "insert_slice", "pad", "linalg", "softmax", "scalar"};
  const char *kind = get_string(op, "op");
  int k = 0;
  while (k < 11 && (!kind || strcmp(kind, kinds[k]) != 0)) k++;
  if (k == 11) return bad(c, "op", "unknown op");
  f->kind = (npu_fop_kind_t)k;
  int64_t v;
  if (!int_array(c, op, "args", 64, 0, d->nvalues - 1, &f->args, &f->nargs)) return 0;
  if (!int_array(c, op, "results", 64, 0, d->nvalues - 1, &f->results, &f->nresults)) return 0;
  if (!get_int(c, op, "binding", -1, d->nbindings - 1, &v, -1)) return 0;
  f->binding = (int)v;
  int n1, n2, n3;
  if (!int_list(c, op, "offsets", NPU_MAX_RANK, -((int64_t)1 << 40), (int64_t)1 << 40, f->offsets, &n1) ||
      !int_list(c, op, "sizes", NPU_MAX_RANK, 0, (int64_t)1 << 40, f->sizes, &n2) ||
      !int_list(c, op, "strides", NPU_MAX_RANK, 1, (int64_t)1 << 40, f->strides, &n3))
    return 0;
  f->nslice = n1;
  if ((f->kind == F_LOAD || f->kind == F_STORE || f->kind == F_EXTRACT || f->kind == F_INSERT) &&
      (n1 != n2 || n2 != n3))
    return bad(c, "offsets", "offsets, sizes and strides differ in length");
  if ((f->kind == F_LOAD || f->kind == F_STORE) && f->binding < 0) return bad(c, "binding", "required");
  const char *data = get_string(op, "data");
  if (f->kind == F_CONST && (!data || !b64(data, &f->data, &f->data_size))) return bad(c, "data", "not base64");
  if (!get_bool(c, op, "splat", &f->splat)) return 0;
  if (!get_int(c, op, "dim", 0, NPU_MAX_RANK - 1, &v, 0)) return 0;
  f->dim = (int)v;
  if (!get_int(c, op, "n_in", 0, f->nargs, &v, 0)) return 0;
  f->n_in = (int)v;
  if (!int_list(c, op, "ranges", NPU_MAX_LOOPS, 0, (int64_t)1 << 40, f->ranges, &f->n_loops)) return 0;
  const npu_json_t *red = get_array(c, op, "reduction", NPU_MAX_LOOPS);
  if (!red) return 0;
  n1 = (int)red->count;
  for (int i = 0; i < n1; ++i) {
    if (red->items[i].kind != NPU_JSON_BOOL) return bad(c, "reduction", "expected true or false per loop");
    f->reduction[i] = red->items[i].integer != 0;
  }
  if (f->kind == F_LINALG) {
    if (n1 != f->n_loops) return bad(c, "reduction", "one flag per loop expected");
    const npu_json_t *maps = get_array(c, op, "maps", 64);
    if (!maps) return 0;
    if ((int)maps->count != f->nargs) return bad(c, "maps", "one map per operand expected");
    f->coef = calloc(maps->count + 1, sizeof(*f->coef));
    if (!f->coef) return bad(c, "maps", "out of memory");
    for (size_t m = 0; m < maps->count; ++m) {
      const npu_json_t *rows = &maps->items[m];
      const npu_vtype_t *t = &d->values[f->args[m]];
      if (rows->kind != NPU_JSON_ARRAY || (int)rows->count != t->rank)
        return bad(c, "maps", "a map's results differ from its operand's rank");
      for (size_t j = 0; j < rows->count; ++j) {
        const npu_json_t *row = &rows->items[j];
        if (row->kind != NPU_JSON_ARRAY || (int)row->count != f->n_loops + 1)
          return bad(c, "maps", "a row needs one coefficient per loop and a constant");
        for (int l = 0; l <= f->n_loops; ++l) {
          const npu_json_t *x = &row->items[l];
          int64_t coef;
          if (!json_int(x, &coef) || coef < -((int64_t)1 << 32) || coef > ((int64_t)1 << 32))
            return bad(c, "maps", "coefficients must be integers within 2^32");
          f->coef[m][j][l] = coef;
        }
      }
    }
    if (f->nresults != f->nargs - f->n_in) return bad(c, "results", "one result per output expected");
  }
  if (f->kind == F_LINALG || f->kind == F_SCALAR) return load_body(c, op, f, d->nvalues);
  return 1;
}

static int load_dispatch(ctx_t *c, const npu_json_t *j, npu_dispatch_desc_t *d) {
  int64_t v;
  if (!get_int(c, j, "dispatch", 0, (int64_t)1 << 40, &d->dispatch, -1)) return 0;
  snprintf(d->symbol, sizeof(d->symbol), "%s", get_string(j, "symbol") ? get_string(j, "symbol") : "?");
  snprintf(d->reason, sizeof(d->reason), "%s", get_string(j, "reason") ? get_string(j, "reason") : "");
  if (d->reason[0]) return 1; /* described by its reason alone */
  const npu_json_t *values = get_array(c, j, "values", 1 << 20);
  if (!values) return 0;
  d->nvalues = (int)values->count;
  d->values = calloc(values->count + 1, sizeof(npu_vtype_t));
  if (!d->values) return bad(c, "values", "out of memory");
  for (int k = 0; k < d->nvalues; ++k) {
    npu_vtype_t *t = &d->values[k];
    if (!elem_of(get_string(&values->items[k], "element"), &t->elem)) return bad(c, "values", "bad element");
    if (!int_list(c, &values->items[k], "shape", NPU_MAX_RANK, 0, (int64_t)1 << 40, t->shape, &t->rank)) return 0;
    t->count = 1;
    for (int r = 0; r < t->rank; ++r) {
      if (t->shape[r] && t->count > ((int64_t)1 << 40) / t->shape[r]) return bad(c, "values", "too large");
      t->count *= t->shape[r];
    }
  }
  if (!get_int(c, j, "bindings", 0, d->nvalues, &v, 0)) return 0;
  d->nbindings = (int)v;
  const npu_json_t *ops = get_array(c, j, "ops", 1 << 20);
  if (!ops) return 0;
  d->nops = (int)ops->count;
  d->ops = calloc(ops->count + 1, sizeof(npu_fop_t));
  if (!d->ops) return bad(c, "ops", "out of memory");
  for (int k = 0; k < d->nops; ++k) {
    snprintf(c->where, sizeof(c->where), "dispatch #%lld.ops[%d]", (long long)d->dispatch, k);
    if (!load_op(c, &ops->items[k], &d->ops[k], d)) return 0;
  }
  snprintf(c->where, sizeof(c->where), "dispatch #%lld", (long long)d->dispatch);
  if (!get_int(c, j, "root", -1, d->nops - 1, &v, -1)) return 0;
  d->root = (int)v;
  if (!int_array(c, j, "epilogue", 1 << 10, 0, d->nops - 1, &d->epilogue, &d->nepilogue)) return 0;
  const npu_json_t *offs = get_array(c, j, "tile_offsets", 1 << 24), *sizes = get_array(c, j, "tile_sizes", 1 << 24);
  if (!offs || !sizes) return 0;
  if (offs->count != sizes->count) return bad(c, "tile_sizes", "one per tile offset expected");
  d->ntiles = (int)offs->count;
  d->tile_offsets = calloc(offs->count + 1, sizeof(*d->tile_offsets));
  d->tile_sizes = calloc(offs->count + 1, sizeof(*d->tile_sizes));
  if (!d->tile_offsets || !d->tile_sizes) return bad(c, "tiles", "out of memory");
  for (int t = 0; t < d->ntiles; ++t) {
    int n1;
    const npu_json_t *o = &offs->items[t], *s = &sizes->items[t];
    if (o->kind != NPU_JSON_ARRAY || s->kind != NPU_JSON_ARRAY || o->count != s->count || o->count > NPU_MAX_LOOPS)
      return bad(c, "tile_offsets", "a tile needs one offset and size per loop");
    n1 = (int)o->count;
    if (t == 0) d->tile_rank = n1;
    if (n1 != d->tile_rank) return bad(c, "tile_offsets", "every tile needs the same number of loops");
    for (int l = 0; l < n1; ++l) {
      if (!json_int(&o->items[l], &d->tile_offsets[t][l]) || !json_int(&s->items[l], &d->tile_sizes[t][l]) ||
          d->tile_offsets[t][l] < 0 || d->tile_sizes[t][l] < 0)
        return bad(c, "tile_offsets", "offsets and sizes must be non-negative integers");
    }
  }
  return npu_exec_verify(d, c->path, c->error);
}

npu_exec_program_t *npu_exec_load(const char *path, char *error) {
  ctx_t c = {path, error, ""};
  FILE *f = fopen(path, "rb");
  if (!f) { snprintf(error, 512, "%s: cannot be read", path); return NULL; }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (size > ((long)1 << 30)) { fclose(f); snprintf(error, 512, "%s: over 1 GiB: not a description", path); return NULL; }
  char *text = size > 0 ? malloc((size_t)size) : NULL;
  size_t got = text ? fread(text, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!text || got != (size_t)size) { free(text); snprintf(error, 512, "%s: cannot be read", path); return NULL; }
  char jerr[160];
  npu_json_t *root = npu_json_parse(text, (size_t)size, jerr);
  free(text);
  if (!root) { snprintf(error, 512, "%s: not JSON: %s", path, jerr); return NULL; }
  npu_exec_program_t *p = calloc(1, sizeof(*p));
  const char *format = get_string(root, "format");
  const npu_json_t *version = npu_json_get(root, "version");
  const npu_json_t *list = get_array(&c, root, "dispatches", 1 << 20);
  int ok = p && list;
  int64_t version_number = 0;
  if (ok && (!format || strcmp(format, FORMAT) != 0 || !json_int(version, &version_number) ||
             version_number != VERSION)) {
    snprintf(error, 512, "%s: not an NPU execution description (%s version %d)", path, FORMAT, VERSION);
    ok = 0;
  }
  if (ok) {
    p->ndispatches = (int)list->count;
    p->dispatches = calloc(list->count + 1, sizeof(npu_dispatch_desc_t));
    ok = p->dispatches != NULL;
    for (int k = 0; ok && k < p->ndispatches; ++k) {
      snprintf(c.where, sizeof(c.where), "dispatches[%d]", k);
      ok = load_dispatch(&c, &list->items[k], &p->dispatches[k]);
    }
  }
  npu_json_free(root);
  if (!ok) {
    npu_exec_free(p);
    return NULL;
  }
  return p;
}

void npu_exec_free(npu_exec_program_t *p) {
  if (!p) return;
  for (int k = 0; k < p->ndispatches; ++k) {
    npu_dispatch_desc_t *d = &p->dispatches[k];
    for (int i = 0; i < d->nops && d->ops; ++i) {
      npu_fop_t *f = &d->ops[i];
      free(f->args), free(f->results), free(f->data), free(f->coef), free(f->body), free(f->yields);
    }
    free(d->values), free(d->ops), free(d->epilogue), free(d->tile_offsets), free(d->tile_sizes);
  }
  free(p->dispatches);
  free(p);
}

const npu_dispatch_desc_t *npu_exec_find(const npu_exec_program_t *p, int64_t dispatch) {
  for (int k = 0; p && k < p->ndispatches; ++k)
    if (p->dispatches[k].dispatch == dispatch) return &p->dispatches[k];
  return NULL;
}

/* Validating one loaded dispatch as a whole, once, before it ever runs (see npu_exec.h).
 *
 * The interpreter (npu_exec.c) relies on what passes here and on nothing
 * else in the file: every value is computed once, before it is read, and
 * never over a binding; every op has the operands and types its code reads;
 * every slice, pad, softmax and linalg indexing map stays inside the values
 * it reaches over its whole iteration domain, and every tile inside that
 * domain; every loop is bounded by an operand it indexes, and the dispatch's
 * work and memory by NPU_MAX_WORK and NPU_MAX_OWNED_BYTES. All arithmetic on
 * the description's numbers is overflow-checked 64-bit. The bindings' sizes
 * are checked against the buffers IREE passes on every call (npu_plugin.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_exec.h"

typedef struct {
  const npu_dispatch_desc_t *d;
  const char *path;
  char *error;
  char *defined; /* per value: computed by an earlier op (bindings: from the start) */
  int op;        /* the op being checked, -1 for the dispatch's own fields */
  int64_t work;
} check_t;

static int refuse(check_t *c, const char *field, const char *why) {
  if (c->op >= 0)
    snprintf(c->error, 512, "%s: dispatch #%lld.ops[%d].%s: %s", c->path, (long long)c->d->dispatch, c->op, field,
             why);
  else
    snprintf(c->error, 512, "%s: dispatch #%lld.%s: %s", c->path, (long long)c->d->dispatch, field, why);
  return 0;
}

static int add(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
static int mul(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

int64_t npu_value_bytes(const npu_dispatch_desc_t *d, int k) {
  return d->values[k].count * (int64_t)npu_elem_size(d->values[k].elem); /* count <= 2^40 (loader) */
}

static int same_type(const npu_vtype_t *a, const npu_vtype_t *b) {
  if (a->elem != b->elem || a->rank != b->rank) return 0;
  for (int j = 0; j < a->rank; ++j)
    if (a->shape[j] != b->shape[j]) return 0;
  return 1;
}

static const npu_vtype_t *val(check_t *c, int id) { return &c->d->values[id]; }

static int add_work(check_t *c, int64_t points) {
  if (!add(c->work, points, &c->work) || c->work > NPU_MAX_WORK)
    return refuse(c, "ranges", "more work than the interpreter does for one dispatch (2^36 points)");
  return 1;
}

static int uses(check_t *c, const npu_fop_t *f) {
  for (int k = 0; k < f->nargs; ++k)
    if (!c->defined[f->args[k]]) return refuse(c, "args", "reads a value before an earlier op computes it");
  return 1;
}

static int defines(check_t *c, const npu_fop_t *f) {
  for (int k = 0; k < f->nresults; ++k) {
    int id = f->results[k];
    if (id < c->d->nbindings) return refuse(c, "results", "a result is a binding");
    if (c->defined[id]) return refuse(c, "results", "a value computed twice");
    c->defined[id] = 1;
  }
  return 1;
}

static int shape_of(check_t *c, int nargs, int nresults, const npu_fop_t *f) {
  if (f->nargs != nargs) return refuse(c, "args", nargs == 1 ? "expected one operand" : "wrong number of operands");
  if (f->nresults != nresults) return refuse(c, "results", "wrong number of results");
  return 1;
}

/* The strided box offs + i * strides (0 <= i < sizes) inside `big`; its element count in *count. */
static int box_inside(check_t *c, const npu_fop_t *f, const npu_vtype_t *big, int64_t *count) {
  if (f->nslice != big->rank) return refuse(c, "offsets", "one offset per dimension of the sliced value expected");
  *count = 1;
  for (int j = 0; j < f->nslice; ++j) {
    int64_t last;
    if (f->sizes[j] > 0 && (f->offsets[j] < 0 || !mul(f->sizes[j] - 1, f->strides[j], &last) ||
                            !add(last, f->offsets[j], &last) || last >= big->shape[j]))
      return refuse(c, "offsets", "the slice reaches outside its value");
    if (!mul(*count, f->sizes[j], count)) return refuse(c, "sizes", "too large");
  }
  return 1;
}

static int slice_matches(check_t *c, const npu_vtype_t *big, const npu_vtype_t *dense, int64_t count) {
  if (count != dense->count) return refuse(c, "sizes", "the slice's size differs from its value's");
  if (big->elem != dense->elem) return refuse(c, "results", "the slice's element type differs from its value's");
  return 1;
}

static int check_body(check_t *c, const npu_fop_t *f, int scalar) {
  for (int k = 0; k < f->nbody; ++k) {
    const npu_body_op_t *o = &f->body[k];
    int arity = npu_body_arity(o->op), outer = o->op == npu_body_opcode("outer");
    int gather = o->op == npu_body_opcode("extract"), index = o->op == npu_body_opcode("index");
    if (arity == 99) return refuse(c, "body", "an `arg` op");
    if (scalar && (outer || gather || index)) return refuse(c, "body", "a scalar op reads no loop or value");
    if (outer || gather) {
      const npu_vtype_t *t = val(c, (int)o->attr);
      if (!c->defined[o->attr]) return refuse(c, "body", "reads a value before an earlier op computes it");
      if (outer && t->rank != 0) return refuse(c, "body", "an outer value that is no scalar");
      if (gather && (o->nargs != t->rank || o->type != t->elem))
        return refuse(c, "body", "a gather whose indices or type differ from its value's");
    }
  }
  return 1;
}

/* dim j of operand `t` under map `row` over loops [0, ranges): inside [0, shape); *lin += coef * rs. */
static int map_inside(check_t *c, const npu_fop_t *f, const int64_t *row, const npu_vtype_t *t, int j, int64_t rs,
                      int64_t *lin) {
  int n = f->n_loops;
  int64_t lo = row[n], hi = row[n], last, term;
  for (int l = 0; l < n; ++l) {
    if (!mul(row[l], f->ranges[l] - 1, &last) || !mul(row[l], rs, &term) || !add(lin[l], term, &lin[l]))
      return refuse(c, "maps", "a coefficient overflows 64 bits");
    if (!add(lo, last < 0 ? last : 0, &lo) || !add(hi, last > 0 ? last : 0, &hi))
      return refuse(c, "maps", "a map overflows 64 bits");
  }
  if (lo < 0 || hi >= t->shape[j]) return refuse(c, "maps", "an indexing map reaches outside its operand");
  return 1;
}

static int check_linalg(check_t *c, const npu_fop_t *f) {
  if (f->nargs < 1 || f->nargs > 64) return refuse(c, "args", "1 to 64 operands expected");
  if (f->nyields != f->nargs - f->n_in) return refuse(c, "yields", "one yield per output expected");
  for (int k = 0; k < f->nresults; ++k)
    if (!same_type(val(c, f->args[f->n_in + k]), val(c, f->results[k])))
      return refuse(c, "results", "a result's type differs from its init operand's");
  if (!check_body(c, f, 0)) return 0;
  int64_t points = 1;
  for (int l = 0; l < f->n_loops; ++l)
    if (!mul(points, f->ranges[l], &points)) return refuse(c, "ranges", "too large");
  if (points == 0) return 1; /* an empty domain reads nothing */
  int used[NPU_MAX_LOOPS] = {0};
  for (int k = 0; k < f->nargs; ++k) {
    const npu_vtype_t *t = val(c, k < f->n_in ? f->args[k] : f->results[k - f->n_in]);
    int64_t rs = 1, lin[NPU_MAX_LOOPS] = {0};
    for (int j = t->rank - 1; j >= 0; --j) {
      if (!map_inside(c, f, f->coef[k][j], t, j, rs, lin)) return 0;
      for (int l = 0; l < f->n_loops; ++l) used[l] |= f->coef[k][j][l] != 0;
      rs *= t->shape[j]; /* <= the value's count */
    }
  }
  for (int l = 0; l < f->n_loops; ++l)
    if (f->ranges[l] > 1 && !used[l]) return refuse(c, "ranges", "a loop that indexes no operand");
  return 1;
}

static int check_op(check_t *c, const npu_fop_t *f) {
  int64_t count;
  const npu_vtype_t *res = f->nresults ? val(c, f->results[0]) : NULL;
  switch (f->kind) {
    case F_LOAD:
      return shape_of(c, 0, 1, f) && box_inside(c, f, val(c, f->binding), &count) &&
             slice_matches(c, val(c, f->binding), res, count);
    case F_STORE:
      return shape_of(c, 1, 0, f) && box_inside(c, f, val(c, f->binding), &count) &&
             slice_matches(c, val(c, f->binding), val(c, f->args[0]), count);
    case F_EMPTY:
      return shape_of(c, 0, 1, f);
    case F_CONST: {
      if (!shape_of(c, 0, 1, f)) return 0;
      int64_t want = f->splat ? (int64_t)npu_elem_size(res->elem) : res->count * (int64_t)npu_elem_size(res->elem);
      return (int64_t)f->data_size == want ? 1 : refuse(c, "data", "its bytes differ from its value's size");
    }
    case F_RESHAPE:
      if (!shape_of(c, 1, 1, f)) return 0;
      if (val(c, f->args[0])->count != res->count || val(c, f->args[0])->elem != res->elem)
        return refuse(c, "results", "a reshape changes the size or the element type");
      return 1;
    case F_EXTRACT:
      return shape_of(c, 1, 1, f) && box_inside(c, f, val(c, f->args[0]), &count) &&
             slice_matches(c, val(c, f->args[0]), res, count);
    case F_INSERT:
      if (!shape_of(c, 2, 1, f)) return 0;
      if (!same_type(val(c, f->args[1]), res)) return refuse(c, "results", "the destination's type differs");
      return box_inside(c, f, res, &count) && slice_matches(c, res, val(c, f->args[0]), count);
    case F_PAD: {
      if (!shape_of(c, 2, 1, f)) return 0;
      const npu_vtype_t *src = val(c, f->args[0]), *pv = val(c, f->args[1]);
      if (pv->count != 1 || pv->elem != res->elem || src->elem != res->elem || src->rank != res->rank)
        return refuse(c, "args", "the padded value or the pad value differs from the result");
      if (f->nslice != res->rank) return refuse(c, "offsets", "one low pad per dimension expected");
      for (int j = 0; j < res->rank; ++j) {
        int64_t end;
        if (f->offsets[j] < 0 || !add(f->offsets[j], src->shape[j], &end) || end > res->shape[j])
          return refuse(c, "offsets", "the padded value reaches outside the result");
      }
      return 1;
    }
    case F_SOFTMAX:
      if (!shape_of(c, 1, 1, f)) return 0;
      if (!same_type(val(c, f->args[0]), res)) return refuse(c, "results", "a softmax changes the type");
      if (f->dim >= res->rank) return refuse(c, "dim", "outside the value's rank");
      return 1;
    case F_SCALAR:
      if (f->nargs > 7 || f->nresults != 1 || f->nbody != 1) return refuse(c, "body", "one op on up to 7 scalars expected");
      for (int k = 0; k < f->nargs; ++k)
        if (val(c, f->args[k])->count < 1) return refuse(c, "args", "an operand with no element");
      return check_body(c, f, 1);
    case F_LINALG:
      return check_linalg(c, f);
  }
  return refuse(c, "op", "unknown op");
}

/* An op in execution order: operands computed, the op's own shape, results computed once. */
static int check_in_order(check_t *c, int i) {
  c->op = i;
  const npu_fop_t *f = &c->d->ops[i];
  if (!uses(c, f) || !check_op(c, f) || !defines(c, f)) return 0;
  if (f->kind == F_LINALG && i != c->d->root) {
    int64_t points = 1;
    for (int l = 0; l < f->n_loops; ++l) mul(points, f->ranges[l], &points); /* checked in check_linalg */
    if (!add_work(c, points)) return 0;
  } else if (f->kind == F_SOFTMAX && i != c->d->root && !add_work(c, val(c, f->args[0])->count)) {
    return 0;
  }
  return 1;
}

/* The root's tiles inside its domain, and the fused ops' loops the root output's. */
static int check_root(check_t *c, char *done) {
  const npu_dispatch_desc_t *d = c->d;
  const npu_fop_t *f = &d->ops[d->root];
  c->op = -1;
  if (f->kind != F_LINALG && f->kind != F_SOFTMAX) return refuse(c, "root", "the root is no linalg op or softmax");
  int loops = f->kind == F_LINALG ? f->n_loops : val(c, f->args[0])->rank;
  if (d->ntiles < 1 || d->tile_rank != loops) return refuse(c, "tile_offsets", "one offset and size per root loop");
  int64_t work = 0;
  for (int t = 0; t < d->ntiles; ++t) {
    int64_t points = 1, end;
    for (int l = 0; l < loops; ++l) {
      int64_t range = f->kind == F_LINALG ? f->ranges[l] : val(c, f->args[0])->shape[l];
      int64_t off = d->tile_offsets[t][l], size = d->tile_sizes[t][l];
      if (!add(off, size, &end) || end > range) return refuse(c, "tile_sizes", "a tile reaches outside the root's loops");
      if (f->kind == F_SOFTMAX && l == f->dim && (off != 0 || size != range))
        return refuse(c, "tile_sizes", "a softmax tile must hold whole rows");
      mul(points, size, &points); /* <= the domain's points, which fit */
    }
    if (!add(work, points, &work)) return refuse(c, "tile_sizes", "too many points");
  }
  if (!mul(work, 1 + d->nepilogue, &work) || !add_work(c, work)) return 0;
  if (d->nepilogue && (f->kind != F_LINALG || f->nresults < 1))
    return refuse(c, "epilogue", "fused ops need a linalg root with a result");
  int rank = f->nresults ? val(c, f->results[0])->rank : 0, out_dim[NPU_MAX_RANK];
  for (int j = 0; j < rank && d->nepilogue; ++j) {
    out_dim[j] = -1;
    for (int l = 0; l < f->n_loops; ++l)
      if (f->coef[f->n_in][j][l]) out_dim[j] = l;
    if (out_dim[j] < 0) return refuse(c, "epilogue", "the root's output map is no projection");
  }
  for (int e = 0; e < d->nepilogue; ++e) {
    int i = d->epilogue[e];
    const npu_fop_t *g = &d->ops[i];
    if (i <= d->root || done[i]) return refuse(c, "epilogue", "a fused op before the root or listed twice");
    if (g->kind != F_LINALG || g->n_loops != rank) return refuse(c, "epilogue", "a fused op is no linalg op over the root's output");
    for (int j = 0; j < rank; ++j)
      if (g->ranges[j] != f->ranges[out_dim[j]])
        return refuse(c, "epilogue", "a fused op's loops differ from the root output's");
    done[i] = 1;
  }
  return 1;
}

int npu_exec_verify(const npu_dispatch_desc_t *d, const char *path, char *error) {
  check_t c = {d, path, error, calloc((size_t)d->nvalues + 1, 1), -1, 0};
  char *done = calloc((size_t)d->nops + 1, 1);
  int ok = c.defined && done;
  if (!ok) snprintf(error, 512, "%s: out of memory", path);
  if (ok && d->nbindings > NPU_MAX_BINDINGS) ok = refuse(&c, "bindings", "over 256 bindings");
  int64_t owned = 0;
  for (int k = 0; ok && k < d->nvalues; ++k) {
    if (k < d->nbindings) c.defined[k] = 1;
    else if (!add(owned, npu_value_bytes(d, k), &owned) || owned > NPU_MAX_OWNED_BYTES)
      ok = refuse(&c, "values", "the dispatch's values need over 8 GiB");
  }
  if (ok && d->root < 0 && d->nepilogue) ok = refuse(&c, "epilogue", "fused ops without a root");
  if (ok && d->root >= 0) ok = check_root(&c, done);
  for (int i = 0; ok && i < d->nops; ++i) {
    if (done[i]) continue;
    ok = check_in_order(&c, i);
    for (int e = 0; ok && i == d->root && e < d->nepilogue; ++e) { /* the fused ops run inside the root */
      ok = check_in_order(&c, d->epilogue[e]);
      c.op = -1;
    }
  }
  free(c.defined);
  free(done);
  return ok;
}

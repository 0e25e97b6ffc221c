/* Running one NPU dispatch from its description (see npu_exec.h).
 *
 * Every value is a dense row-major tensor; ops run in order. The root op
 * runs tile by tile in the program's task order; when a tile finishes its
 * output block (its reduction loops reach their ends) the fused
 * elementwise ops run on that block. Accesses are bounds-checked once per
 * box, before any element is read or written.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_exec.h"

#define B_ARG_OUTER 3 /* BODY "outer" (npu_exec_body.c) */

typedef struct {
  const npu_dispatch_desc_t *d;
  npu_tensor_t *t;  /* one per value */
  char *error;
} run_t;

static int fail(run_t *r, const char *fmt, const char *what) {
  snprintf(r->error, 512, fmt, what);
  return 1;
}

static int alloc_value(run_t *r, int id) {
  npu_tensor_t *t = &r->t[id];
  t->type = r->d->values[id];
  t->data = calloc((size_t)t->type.count + 1, npu_elem_size(t->type.elem));
  t->owned = 1;
  return t->data ? 0 : fail(r, "out of memory for a value of %s", "the dispatch");
}

static void row_strides(const npu_vtype_t *t, int64_t *s) {
  int64_t acc = 1;
  for (int j = t->rank - 1; j >= 0; --j) s[j] = acc, acc *= t->shape[j];
}

/* Copies a strided box of `big` to or from the dense `small` (to_big: small -> big). */
static int copy_box(run_t *r, npu_tensor_t *big, npu_tensor_t *small, const int64_t *offs, const int64_t *sizes,
                    const int64_t *strides, int rank, int to_big) {
  int64_t count = 1, rs[NPU_MAX_RANK], idx[NPU_MAX_RANK] = {0};
  if (rank != big->type.rank) return fail(r, "a slice of %s has the wrong rank", "a tensor");
  for (int j = 0; j < rank; ++j) {
    if (sizes[j] && (offs[j] < 0 || offs[j] + (sizes[j] - 1) * strides[j] >= big->type.shape[j]))
      return fail(r, "a slice outside %s", "its tensor");
    count *= sizes[j];
  }
  if (count != small->type.count || big->type.elem != small->type.elem)
    return fail(r, "a slice whose size or type differs from %s", "its value");
  row_strides(&big->type, rs);
  size_t es = npu_elem_size(big->type.elem);
  for (int64_t k = 0; k < count; ++k) {
    int64_t at = 0;
    for (int j = 0; j < rank; ++j) at += (offs[j] + idx[j] * strides[j]) * rs[j];
    if (to_big) memcpy(big->data + at * es, small->data + k * es, es);
    else memcpy(small->data + k * es, big->data + at * es, es);
    for (int j = rank - 1; j >= 0; --j) {
      if (++idx[j] < sizes[j]) break;
      idx[j] = 0;
    }
  }
  return 0;
}

static double scalar_f(const npu_tensor_t *t) { return npu_load_f(t->type.elem, t->data); }

/* ------------------------------------------------------------------ linalg over a box */

typedef struct {
  const npu_fop_t *f;
  npu_tensor_t *opnd[64];  /* inputs, then the results being written */
  int64_t lin[64][NPU_MAX_LOOPS];  /* element stride of each operand per loop */
  int64_t base[64];
  npu_scalar_t outer[4096];
  const npu_tensor_t *values;  /* the dispatch's values: what `extract` gathers from */
  char *error;
} box_t;

static int setup_box(run_t *r, box_t *b, const int64_t *offs, const int64_t *sizes) {
  const npu_fop_t *f = b->f;
  int n = f->n_loops;
  for (int k = 0; k < f->nargs; ++k) {
    npu_tensor_t *t = b->opnd[k];
    int64_t rs[NPU_MAX_RANK];
    row_strides(&t->type, rs);
    b->base[k] = 0;
    for (int l = 0; l < n; ++l) b->lin[k][l] = 0;
    for (int j = 0; j < t->type.rank; ++j) {
      const int64_t *row = f->coef[k][j];
      int64_t lo = row[n], hi = row[n];
      for (int l = 0; l < n; ++l) {
        int64_t first = row[l] * offs[l], last = row[l] * (offs[l] + sizes[l] - 1);
        lo += first < last ? first : last, hi += first < last ? last : first;
        b->lin[k][l] += row[l] * rs[j];
      }
      if (lo < 0 || hi >= t->type.shape[j]) {
        snprintf(r->error, 512, "operand %d of a linalg op reads [%lld, %lld] outside its dimension %d of size %lld",
                 k, (long long)lo, (long long)hi, j, (long long)t->type.shape[j]);
        return 1;
      }
      int64_t at = row[n];
      for (int l = 0; l < n; ++l) at += row[l] * offs[l];
      b->base[k] += at * rs[j];
    }
  }
  for (int k = 0; k < f->nbody && k < 4096; ++k)
    if (f->body[k].op == B_ARG_OUTER) {
      const npu_tensor_t *t = &r->t[f->body[k].attr];
      if (!t->data) return fail(r, "a body reads %s before it is computed", "a value");
      if (npu_elem_is_float(t->type.elem)) b->outer[k].f = scalar_f(t);
      else b->outer[k].i = npu_load_i(t->type.elem, t->data);
    }
  return 0;
}

/* A factor of the MAC body's product: an input (maybe cast), or a scalar (a constant or captured value). */
typedef struct {
  int input;  /* operand index, or -1 for a scalar */
  int cast;   /* body index of the cast applied to the input, or -1 */
  npu_scalar_t scalar;
} factor_t;

/* Is the body out += a * b, each factor an input (maybe cast) or a scalar: the MAC array's loop? */
static int plan_mac(const npu_fop_t *f, box_t *b, factor_t *fac) {
  int out = f->n_in;
  if (f->nargs != f->n_in + 1 || f->nyields != 1 || f->nbody < 2 || f->nbody > 6) return 0;
  const npu_body_op_t *add = &f->body[f->nbody - 1], *mul = &f->body[f->nbody - 2];
  int mv = f->nargs + f->nbody - 2; /* the product's value id */
  if (f->yields[0] != mv + 1) return 0;
  int fadd = add->op == npu_body_opcode("arith.addf"), iadd = add->op == npu_body_opcode("arith.addi");
  if (!(fadd || iadd) || add->nargs != 2 || mul->nargs != 2) return 0;
  if (!((add->args[0] == out && add->args[1] == mv) || (add->args[1] == out && add->args[0] == mv))) return 0;
  if (mul->op != npu_body_opcode(fadd ? "arith.mulf" : "arith.muli")) return 0;
  static const char *const casts[] = {"arith.extf", "arith.extsi", "arith.sitofp", "arith.truncf", "arith.extui",
                                      "arith.uitofp"};
  for (int a = 0; a < 2; ++a) {
    int v = mul->args[a];
    factor_t *x = &fac[a];
    x->input = -1, x->cast = -1;
    if (v < f->n_in) { x->input = v; continue; }
    if (v < f->nargs || v >= mv) return 0; /* the accumulator itself */
    int k = v - f->nargs;
    const npu_body_op_t *c = &f->body[k];
    if (c->op == 1) { npu_elem_t none = c->type; x->scalar = npu_body_eval(c, NULL, &none, NULL); continue; }
    if (c->op == B_ARG_OUTER) { x->scalar = b->outer[k]; continue; }
    int is_cast = 0;
    for (int q = 0; q < 6; ++q) is_cast |= c->op == npu_body_opcode(casts[q]);
    if (!is_cast || c->nargs != 1 || c->args[0] >= f->n_in) return 0;
    x->input = c->args[0], x->cast = k;
  }
  for (int k = 0; k < f->nbody - 2; ++k) { /* nothing else in the body */
    int used = 0;
    for (int a = 0; a < 2; ++a) used |= mul->args[a] == f->nargs + k;
    if (!used) return 0;
  }
  return 1;
}

static npu_scalar_t factor_value(const npu_fop_t *f, box_t *b, const factor_t *x, int64_t at) {
  if (x->input < 0) return x->scalar;
  npu_elem_t e = b->opnd[x->input]->type.elem;
  const unsigned char *p = b->opnd[x->input]->data + at * npu_elem_size(e);
  npu_scalar_t v;
  if (npu_elem_is_float(e)) v.f = npu_load_f(e, p); else v.i = npu_load_i(e, p);
  if (x->cast < 0) return v;
  npu_body_op_t cast = f->body[x->cast];
  cast.args[0] = 0;
  return npu_body_eval(&cast, &v, &e, NULL);
}

static npu_elem_t factor_type(const npu_fop_t *f, box_t *b, const factor_t *x) {
  if (x->cast >= 0) return f->body[x->cast].type;
  if (x->input >= 0) return b->opnd[x->input]->type.elem;
  return f->body[f->nbody - 2].type;
}

/* f32 out += a * b with a parallel loop `row` along which the output is contiguous: that loop goes
 * innermost (a vector loop over output elements) and the reduction loops run outside it in their
 * order, so each output element still sums its products in the same sequence: the same result. */
static void run_mac_f32_rows(box_t *b, const factor_t *fac, const int64_t *sizes, int row) {
  const npu_fop_t *f = b->f;
  int n = f->n_loops, outer[NPU_MAX_LOOPS], no = 0, o = f->n_in, in0 = fac[0].input, in1 = fac[1].input;
  for (int l = 0; l < n; ++l) if (!f->reduction[l] && l != row) outer[no++] = l;
  for (int l = 0; l < n; ++l) if (f->reduction[l]) outer[no++] = l; /* reductions innermost of the outer loops */
  int64_t len = sizes[row], s0 = in0 >= 0 ? b->lin[in0][row] : 0, s1 = in1 >= 0 ? b->lin[in1][row] : 0;
  float c0 = (float)fac[0].scalar.f, c1 = (float)fac[1].scalar.f;
  int64_t idx[NPU_MAX_LOOPS] = {0};
  for (;;) {
    int64_t a = in0 >= 0 ? b->base[in0] : 0, c = in1 >= 0 ? b->base[in1] : 0, q0 = b->base[o];
    for (int q = 0; q < no; ++q) {
      if (in0 >= 0) a += idx[q] * b->lin[in0][outer[q]];
      if (in1 >= 0) c += idx[q] * b->lin[in1][outer[q]];
      q0 += idx[q] * b->lin[o][outer[q]];
    }
    float *out = (float *)b->opnd[o]->data + q0;
    const float *pa = in0 >= 0 ? (const float *)b->opnd[in0]->data + a : NULL;
    const float *pb = in1 >= 0 ? (const float *)b->opnd[in1]->data + c : NULL;
    if (pa && pb && s0 == 1 && s1 == 0) for (int64_t i = 0; i < len; ++i) out[i] += pa[i] * pb[0];
    else if (pa && pb && s0 == 0 && s1 == 1) for (int64_t i = 0; i < len; ++i) out[i] += pa[0] * pb[i];
    else if (pa && pb) for (int64_t i = 0; i < len; ++i) out[i] += pa[i * s0] * pb[i * s1];
    else if (pa && s0 == 1) for (int64_t i = 0; i < len; ++i) out[i] += pa[i] * c1;
    else if (pa) for (int64_t i = 0; i < len; ++i) out[i] += pa[i * s0] * c1;
    else if (pb) for (int64_t i = 0; i < len; ++i) out[i] += c0 * pb[i * s1];
    else for (int64_t i = 0; i < len; ++i) out[i] += c0 * c1;
    int q = no - 1;
    for (; q >= 0; --q) { if (++idx[q] < sizes[outer[q]]) break; idx[q] = 0; }
    if (q < 0) break;
  }
}

static void run_mac(box_t *b, const factor_t *fac, const int64_t *sizes) {
  const npu_fop_t *f = b->f;
  int n = f->n_loops, par[NPU_MAX_LOOPS], red[NPU_MAX_LOOPS], np_ = 0, nr = 0, o = f->n_in;
  for (int l = 0; l < n; ++l) *(f->reduction[l] ? &red[nr++] : &par[np_++]) = l;
  npu_elem_t acc_t = b->opnd[o]->type.elem;
  size_t acc_es = npu_elem_size(acc_t);
  int in0 = fac[0].input, in1 = fac[1].input;
  npu_elem_t e0 = in0 >= 0 ? b->opnd[in0]->type.elem : acc_t, e1 = in1 >= 0 ? b->opnd[in1]->type.elem : acc_t;
  int f32 = acc_t == E_F32 && factor_type(f, b, &fac[0]) == E_F32 && factor_type(f, b, &fac[1]) == E_F32 &&
            (in0 < 0 || (e0 == E_F32 && fac[0].cast < 0)) && (in1 < 0 || (e1 == E_F32 && fac[1].cast < 0));
  int i8 = acc_t == E_I32 && in0 >= 0 && in1 >= 0 && e0 == E_I8 && e1 == E_I8 && fac[0].cast >= 0 &&
           fac[1].cast >= 0 && f->body[fac[0].cast].op == npu_body_opcode("arith.extsi") &&
           f->body[fac[1].cast].op == npu_body_opcode("arith.extsi") && factor_type(f, b, &fac[0]) == E_I32 &&
           factor_type(f, b, &fac[1]) == E_I32;
  if (f32) {
    for (int q = np_ - 1; q >= 0; --q)
      if (b->lin[o][par[q]] == 1 && sizes[par[q]] > 1) {
        run_mac_f32_rows(b, fac, sizes, par[q]);
        return;
      }
  }
  int last = nr - 1;
  int64_t inner = sizes[red[last]];
  int64_t s0 = in0 >= 0 ? b->lin[in0][red[last]] : 0, s1 = in1 >= 0 ? b->lin[in1][red[last]] : 0;
  float c0 = (float)fac[0].scalar.f, c1 = (float)fac[1].scalar.f;
  int64_t pidx[NPU_MAX_LOOPS] = {0};
  npu_body_op_t mul = f->body[f->nbody - 2], add = f->body[f->nbody - 1];
  mul.args[0] = 0, mul.args[1] = 1, add.args[0] = 0, add.args[1] = 1;
  for (;;) {
    int64_t at0 = in0 >= 0 ? b->base[in0] : 0, at1 = in1 >= 0 ? b->base[in1] : 0, ato = b->base[o];
    for (int q = 0; q < np_; ++q) {
      if (in0 >= 0) at0 += pidx[q] * b->lin[in0][par[q]];
      if (in1 >= 0) at1 += pidx[q] * b->lin[in1][par[q]];
      ato += pidx[q] * b->lin[o][par[q]];
    }
    unsigned char *out = b->opnd[o]->data + ato * acc_es;
    int64_t ridx[NPU_MAX_LOOPS] = {0};
    float facc = 0;
    int32_t iacc = 0;
    npu_scalar_t acc;
    if (f32) memcpy(&facc, out, 4);
    else if (i8) memcpy(&iacc, out, 4);
    else if (npu_elem_is_float(acc_t)) acc.f = npu_load_f(acc_t, out);
    else acc.i = npu_load_i(acc_t, out);
    for (;;) {
      int64_t a = at0, c = at1;
      for (int q = 0; q < last; ++q) {
        if (in0 >= 0) a += ridx[q] * b->lin[in0][red[q]];
        if (in1 >= 0) c += ridx[q] * b->lin[in1][red[q]];
      }
      if (f32) {
        const float *pa = in0 >= 0 ? (const float *)b->opnd[in0]->data + a : NULL;
        const float *pb = in1 >= 0 ? (const float *)b->opnd[in1]->data + c : NULL;
        if (pa && pb) for (int64_t i = 0; i < inner; ++i) facc += pa[i * s0] * pb[i * s1];
        else if (pa) for (int64_t i = 0; i < inner; ++i) facc += pa[i * s0] * c1;
        else if (pb) for (int64_t i = 0; i < inner; ++i) facc += c0 * pb[i * s1];
        else for (int64_t i = 0; i < inner; ++i) facc += c0 * c1;
      } else if (i8) {
        const int8_t *pa = (const int8_t *)b->opnd[in0]->data + a, *pb = (const int8_t *)b->opnd[in1]->data + c;
        uint32_t u = (uint32_t)iacc; /* i32 wraps as the hardware's accumulator does */
        for (int64_t i = 0; i < inner; ++i) u += (uint32_t)((int32_t)pa[i * s0] * (int32_t)pb[i * s1]);
        iacc = (int32_t)u;
      } else { /* other types: the body's own semantics, one point at a time */
        for (int64_t i = 0; i < inner; ++i) {
          npu_scalar_t v[2] = {factor_value(f, b, &fac[0], a + i * s0), factor_value(f, b, &fac[1], c + i * s1)};
          npu_elem_t t[2] = {factor_type(f, b, &fac[0]), factor_type(f, b, &fac[1])};
          npu_scalar_t p2[2] = {acc, npu_body_eval(&mul, v, t, NULL)};
          npu_elem_t t2[2] = {acc_t, mul.type};
          acc = npu_body_eval(&add, p2, t2, NULL);
        }
      }
      int q = last - 1;
      for (; q >= 0; --q) { if (++ridx[q] < sizes[red[q]]) break; ridx[q] = 0; }
      if (q < 0) break;
    }
    if (f32) memcpy(out, &facc, 4);
    else if (i8) memcpy(out, &iacc, 4);
    else if (npu_elem_is_float(acc_t)) npu_store_f(acc_t, out, acc.f);
    else npu_store_i(acc_t, out, acc.i);
    int q = np_ - 1;
    for (; q >= 0; --q) { if (++pidx[q] < sizes[par[q]]) break; pidx[q] = 0; }
    if (q < 0) break;
  }
}

/* `extract`: the element of a function value at the indices the body computed (bounds-checked). */
static int gather(box_t *b, const npu_body_op_t *op, const npu_scalar_t *vals, npu_scalar_t *out) {
  const npu_tensor_t *t = &b->values[op->attr];
  int64_t rs[NPU_MAX_RANK], at = 0;
  if (!t->data || op->nargs != t->type.rank || op->type != t->type.elem) {
    snprintf(b->error, 512, "a gather from a value that does not match its indices");
    return 1;
  }
  row_strides(&t->type, rs);
  for (int j = 0; j < op->nargs; ++j) {
    int64_t i = vals[op->args[j]].i;
    if (i < 0 || i >= t->type.shape[j]) {
      snprintf(b->error, 512, "a gather reads index %lld outside dimension %d of size %lld", (long long)i, j,
               (long long)t->type.shape[j]);
      return 1;
    }
    at += i * rs[j];
  }
  const unsigned char *p = t->data + at * npu_elem_size(t->type.elem);
  if (npu_elem_is_float(t->type.elem)) out->f = npu_load_f(t->type.elem, p); else out->i = npu_load_i(t->type.elem, p);
  return 0;
}

/* Any body: every point of the box in order (parallel loops outside, reductions inside). */
static int run_points(box_t *b, const int64_t *offs, const int64_t *sizes) {
  const npu_fop_t *f = b->f;
  int n = f->n_loops, order[NPU_MAX_LOOPS], m = 0;
  for (int l = 0; l < n; ++l) if (!f->reduction[l]) order[m++] = l;
  for (int l = 0; l < n; ++l) if (f->reduction[l]) order[m++] = l;
  int nv = f->nargs + f->nbody;
  npu_scalar_t *vals = calloc((size_t)nv + 1, sizeof(npu_scalar_t));
  npu_elem_t *types = calloc((size_t)nv + 1, sizeof(npu_elem_t));
  int rc = 0, extract = npu_body_opcode("extract");
  if (!vals || !types) { free(vals), free(types); snprintf(b->error, 512, "out of memory"); return 1; }
  for (int k = 0; k < f->nargs; ++k) types[k] = b->opnd[k]->type.elem;
  for (int k = 0; k < f->nbody; ++k) types[f->nargs + k] = f->body[k].type;
  int64_t idx[NPU_MAX_LOOPS] = {0}, loop[NPU_MAX_LOOPS];
  for (;;) {
    for (int l = 0; l < n; ++l) loop[l] = offs[l];
    for (int q = 0; q < n; ++q) loop[order[q]] = offs[order[q]] + idx[q];
    int64_t at[64];
    for (int k = 0; k < f->nargs; ++k) {
      at[k] = b->base[k];
      for (int l = 0; l < n; ++l) at[k] += (loop[l] - offs[l]) * b->lin[k][l];
      npu_elem_t e = types[k];
      const unsigned char *p = b->opnd[k]->data + at[k] * npu_elem_size(e);
      if (npu_elem_is_float(e)) vals[k].f = npu_load_f(e, p); else vals[k].i = npu_load_i(e, p);
    }
    for (int k = 0; k < f->nbody && !rc; ++k) {
      if (f->body[k].op == B_ARG_OUTER) vals[f->nargs + k] = b->outer[k];
      else if (f->body[k].op == extract) rc = gather(b, &f->body[k], vals, &vals[f->nargs + k]);
      else vals[f->nargs + k] = npu_body_eval(&f->body[k], vals, types, loop);
    }
    if (rc) break;
    for (int y = 0; y < f->nyields; ++y) {
      int k = f->n_in + y;
      npu_elem_t e = types[k];
      unsigned char *p = b->opnd[k]->data + at[k] * npu_elem_size(e);
      npu_scalar_t v = vals[f->yields[y]];
      if (npu_elem_is_float(e)) npu_store_f(e, p, npu_elem_is_float(types[f->yields[y]]) ? v.f : (double)v.i);
      else npu_store_i(e, p, npu_elem_is_float(types[f->yields[y]]) ? (int64_t)v.f : v.i);
    }
    int q = n - 1;
    for (; q >= 0; --q) { if (++idx[q] < sizes[order[q]]) break; idx[q] = 0; }
    if (q < 0) break;
  }
  free(vals), free(types);
  return rc;
}

static int run_linalg_box(run_t *r, const npu_fop_t *f, const int64_t *offs, const int64_t *sizes) {
  if (f->nargs > 64) return fail(r, "a linalg op with over 64 %s", "operands");
  for (int l = 0; l < f->n_loops; ++l) if (sizes[l] == 0) return 0;
  box_t *b = calloc(1, sizeof(box_t));
  if (!b) return fail(r, "out of memory for %s", "a linalg op");
  b->f = f, b->values = r->t, b->error = r->error;
  for (int k = 0; k < f->nargs; ++k)
    b->opnd[k] = k < f->n_in ? &r->t[f->args[k]] : &r->t[f->results[k - f->n_in]];
  int rc = setup_box(r, b, offs, sizes);
  if (rc == 0) {
    int any_red = 0;
    for (int l = 0; l < f->n_loops; ++l) any_red |= f->reduction[l];
    factor_t fac[2];
    if (any_red && plan_mac(f, b, fac)) run_mac(b, fac, sizes);
    else rc = run_points(b, offs, sizes);
  }
  free(b);
  return rc;
}

/* ------------------------------------------------------------------ function-level ops */

static int softmax_box(run_t *r, const npu_tensor_t *x, npu_tensor_t *out, int axis, const int64_t *offs,
                       const int64_t *sizes) {
  /* exp(x - max) / sum(exp(x - max)) along `axis`, in double, over whole rows of the box */
  const npu_vtype_t *t = &x->type;
  if (axis >= t->rank || offs[axis] != 0 || sizes[axis] != t->shape[axis])
    return fail(r, "a softmax tile must hold %s", "whole rows");
  int64_t rs[NPU_MAX_RANK], idx[NPU_MAX_RANK] = {0}, rows = 1;
  row_strides(t, rs);
  for (int j = 0; j < t->rank; ++j) {
    if (offs[j] < 0 || offs[j] + sizes[j] > t->shape[j]) return fail(r, "a softmax tile outside %s", "its tensor");
    if (j != axis) rows *= sizes[j];
  }
  size_t es = npu_elem_size(t->elem);
  int64_t n = t->shape[axis], step = rs[axis];
  double *e = malloc((size_t)(n + 1) * sizeof(double));
  if (!e) return fail(r, "out of memory for %s", "a softmax");
  for (int64_t row = 0; row < rows; ++row) {
    int64_t at = 0;
    for (int j = 0; j < t->rank; ++j) if (j != axis) at += (offs[j] + idx[j]) * rs[j];
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; ++i) { e[i] = npu_load_f(t->elem, x->data + (at + i * step) * es); mx = e[i] > mx ? e[i] : mx; }
    for (int64_t i = 0; i < n; ++i) sum += (e[i] = exp(e[i] - mx));
    for (int64_t i = 0; i < n; ++i) npu_store_f(t->elem, out->data + (at + i * step) * es, e[i] / sum);
    for (int j = t->rank - 1; j >= 0; --j) {
      if (j == axis) continue;
      if (++idx[j] < sizes[j]) break;
      idx[j] = 0;
    }
  }
  free(e);
  return 0;
}

static int pad(run_t *r, const npu_fop_t *f) {
  npu_tensor_t *src = &r->t[f->args[0]], *out = &r->t[f->results[0]];
  const npu_tensor_t *value = &r->t[f->args[1]];
  if (alloc_value(r, f->results[0])) return 1;
  if (value->type.count != 1 || src->type.rank != out->type.rank || src->type.elem != out->type.elem)
    return fail(r, "a tensor.pad whose operands do not match %s", "its result");
  size_t es = npu_elem_size(out->type.elem);
  for (int64_t k = 0; k < out->type.count; ++k) memcpy(out->data + k * es, value->data, es);
  int64_t ones[NPU_MAX_RANK];
  for (int j = 0; j < NPU_MAX_RANK; ++j) ones[j] = 1;
  return copy_box(r, out, src, f->offsets, src->type.shape, ones, out->type.rank, 1);
}

static int scalar_op(run_t *r, const npu_fop_t *f) {
  if (alloc_value(r, f->results[0])) return 1;
  npu_scalar_t vals[8];
  npu_elem_t types[8];
  if (f->nargs > 7 || f->nbody != 1) return fail(r, "a scalar op of %s", "unexpected shape");
  for (int k = 0; k < f->nargs; ++k) {
    const npu_tensor_t *t = &r->t[f->args[k]];
    types[k] = t->type.elem;
    if (npu_elem_is_float(t->type.elem)) vals[k].f = scalar_f(t); else vals[k].i = npu_load_i(t->type.elem, t->data);
  }
  npu_scalar_t v = npu_body_eval(&f->body[0], vals, types, NULL);
  npu_tensor_t *out = &r->t[f->results[0]];
  if (npu_elem_is_float(out->type.elem)) npu_store_f(out->type.elem, out->data, v.f);
  else npu_store_i(out->type.elem, out->data, v.i);
  return 0;
}

/* The results of a linalg op start as copies of its outs operands. */
static int fresh_outputs(run_t *r, const npu_fop_t *f) {
  for (int k = 0; k < f->nresults; ++k) {
    const npu_tensor_t *init = &r->t[f->args[f->n_in + k]];
    if (!init->data) return fail(r, "an op reads %s before it is computed", "a value");
    if (alloc_value(r, f->results[k])) return 1;
    npu_tensor_t *out = &r->t[f->results[k]];
    if (init->type.count != out->type.count || init->type.elem != out->type.elem)
      return fail(r, "a linalg result differs from %s", "its init operand");
    memcpy(out->data, init->data, (size_t)out->type.count * npu_elem_size(out->type.elem));
  }
  return 0;
}

static void perturb(run_t *r, const npu_fop_t *f, const int64_t *offs, const int64_t *sizes, double delta) {
  /* adds delta to the tile's output region (each output dimension follows one loop) */
  for (int k = 0; k < f->nresults; ++k) {
    npu_tensor_t *t = &r->t[f->results[k]];
    int rank = t->type.rank;
    int64_t lo[NPU_MAX_RANK], n[NPU_MAX_RANK], idx[NPU_MAX_RANK] = {0}, rs[NPU_MAX_RANK], count = 1;
    row_strides(&t->type, rs);
    for (int j = 0; j < rank; ++j) {
      const int64_t *row = f->coef[f->n_in + k][j];
      lo[j] = row[f->n_loops], n[j] = 1;
      for (int l = 0; l < f->n_loops; ++l)
        if (row[l]) lo[j] += row[l] * offs[l], n[j] = sizes[l];
      if (lo[j] < 0 || lo[j] + n[j] > t->type.shape[j]) return; /* not a projection: nothing to perturb */
      count *= n[j];
    }
    size_t es = npu_elem_size(t->type.elem);
    for (int64_t q = 0; q < count; ++q) {
      int64_t at = 0;
      for (int j = 0; j < rank; ++j) at += (lo[j] + idx[j]) * rs[j];
      unsigned char *p = t->data + at * es;
      if (npu_elem_is_float(t->type.elem)) npu_store_f(t->type.elem, p, npu_load_f(t->type.elem, p) + delta);
      else npu_store_i(t->type.elem, p, npu_load_i(t->type.elem, p) + (int64_t)delta);
      for (int j = rank - 1; j >= 0; --j) { if (++idx[j] < n[j]) break; idx[j] = 0; }
    }
  }
}

static int run_root(run_t *r, const npu_fop_t *f, char *done, const npu_fault_t *fault) {
  const npu_dispatch_desc_t *d = r->d;
  if (f->kind == F_SOFTMAX) {
    if (alloc_value(r, f->results[0])) return 1;
    for (int t = 0; t < d->ntiles; ++t)
      if (softmax_box(r, &r->t[f->args[0]], &r->t[f->results[0]], f->dim, d->tile_offsets[t], d->tile_sizes[t]))
        return 1;
    return 0;
  }
  if (f->kind != F_LINALG) return fail(r, "the root op is no %s", "linalg op");
  if (fresh_outputs(r, f)) return 1;
  /* the fused ops' results start now: they fill tile by tile with the root's */
  const npu_fop_t *out_map_op = f;
  for (int e = 0; e < d->nepilogue; ++e) {
    const npu_fop_t *g = &d->ops[d->epilogue[e]];
    if (g->kind != F_LINALG || fresh_outputs(r, g)) return r->error[0] ? 1 : fail(r, "a fused op is no %s", "linalg op");
    done[d->epilogue[e]] = 1;
  }
  int out_dim[NPU_MAX_RANK], rank = f->nresults ? r->t[f->results[0]].type.rank : 0;
  for (int j = 0; j < rank; ++j) {
    out_dim[j] = -1;
    for (int l = 0; l < f->n_loops; ++l) if (out_map_op->coef[f->n_in][j][l]) out_dim[j] = l;
    if (out_dim[j] < 0) return fail(r, "the root's output map is no %s", "projection");
  }
  for (int t = 0; t < d->ntiles; ++t) {
    const int64_t *offs = d->tile_offsets[t], *sizes = d->tile_sizes[t];
    if (run_linalg_box(r, f, offs, sizes)) return 1;
    if (fault && fault->dispatch == d->dispatch && fault->tile == t) perturb(r, f, offs, sizes, fault->delta);
    int final = 1;
    for (int l = 0; l < f->n_loops; ++l)
      if (f->reduction[l] && offs[l] + sizes[l] < f->ranges[l]) final = 0;
    if (!final || !d->nepilogue) continue;
    int64_t eo[NPU_MAX_LOOPS], es[NPU_MAX_LOOPS];
    for (int j = 0; j < rank; ++j) eo[j] = offs[out_dim[j]], es[j] = sizes[out_dim[j]];
    for (int e = 0; e < d->nepilogue; ++e) {
      const npu_fop_t *g = &d->ops[d->epilogue[e]];
      if (g->n_loops != rank) return fail(r, "a fused op's loops differ from %s", "the root's output");
      if (run_linalg_box(r, g, eo, es)) return 1;
    }
  }
  return 0;
}

static int run_op(run_t *r, int i, char *done, const npu_fault_t *fault) {
  const npu_dispatch_desc_t *d = r->d;
  const npu_fop_t *f = &d->ops[i];
  for (int k = 0; k < f->nargs; ++k)
    if (!r->t[f->args[k]].data) return fail(r, "an op reads %s before it is computed", "a value");
  if (i == d->root) return run_root(r, f, done, fault);
  npu_tensor_t *res = f->nresults ? &r->t[f->results[0]] : NULL;
  switch (f->kind) {
    case F_LOAD: {
      if (alloc_value(r, f->results[0])) return 1;
      return copy_box(r, &r->t[f->binding], res, f->offsets, f->sizes, f->strides, f->nslice, 0);
    }
    case F_STORE:
      return copy_box(r, &r->t[f->binding], &r->t[f->args[0]], f->offsets, f->sizes, f->strides, f->nslice, 1);
    case F_EMPTY:
      return alloc_value(r, f->results[0]);
    case F_CONST: {
      if (alloc_value(r, f->results[0])) return 1;
      size_t es = npu_elem_size(res->type.elem), want = f->splat ? es : (size_t)res->type.count * es;
      if (f->data_size != want) return fail(r, "a constant's data does not match %s", "its type");
      for (int64_t k = 0; k < (f->splat ? res->type.count : 1); ++k)
        memcpy(res->data + k * es, f->data, want);
      return 0;
    }
    case F_RESHAPE: {
      const npu_tensor_t *src = &r->t[f->args[0]];
      if (src->type.count != d->values[f->results[0]].count) return fail(r, "a reshape changes %s", "the size");
      res->type = d->values[f->results[0]];
      res->data = src->data, res->owned = 0;
      return 0;
    }
    case F_EXTRACT: {
      if (alloc_value(r, f->results[0])) return 1;
      return copy_box(r, &r->t[f->args[0]], res, f->offsets, f->sizes, f->strides, f->nslice, 0);
    }
    case F_INSERT: {
      if (alloc_value(r, f->results[0])) return 1;
      const npu_tensor_t *dest = &r->t[f->args[1]];
      if (dest->type.count != res->type.count) return fail(r, "an insert_slice changes %s", "the size");
      memcpy(res->data, dest->data, (size_t)res->type.count * npu_elem_size(res->type.elem));
      return copy_box(r, res, &r->t[f->args[0]], f->offsets, f->sizes, f->strides, f->nslice, 1);
    }
    case F_PAD:
      return pad(r, f);
    case F_SOFTMAX: {
      if (alloc_value(r, f->results[0])) return 1;
      int64_t zeros[NPU_MAX_RANK] = {0};
      return softmax_box(r, &r->t[f->args[0]], res, f->dim, zeros, r->t[f->args[0]].type.shape);
    }
    case F_SCALAR:
      return scalar_op(r, f);
    case F_LINALG: {
      if (fresh_outputs(r, f)) return 1;
      int64_t zeros[NPU_MAX_LOOPS] = {0};
      return run_linalg_box(r, f, zeros, f->ranges);
    }
  }
  return fail(r, "unknown op %s", "kind");
}

int npu_exec_run(const npu_dispatch_desc_t *d, unsigned char **bindings, const npu_fault_t *fault, char *error) {
  if (d->reason[0]) {
    snprintf(error, 512, "not interpretable standalone: %s", d->reason);
    return 1;
  }
  run_t r = {d, calloc((size_t)d->nvalues + 1, sizeof(npu_tensor_t)), error};
  char *done = calloc((size_t)d->nops + 1, 1);
  int rc = 0;
  error[0] = '\0';
  if (!r.t || !done) rc = fail(&r, "out of memory for %s", "the dispatch");
  for (int k = 0; !rc && k < d->nbindings; ++k) r.t[k].type = d->values[k], r.t[k].data = bindings[k];
  if (!rc && d->root >= 0) {
    const npu_fop_t *root = &d->ops[d->root];
    int loops = root->kind == F_LINALG ? root->n_loops : d->values[root->args[0]].rank;
    if (d->ntiles == 0 || d->tile_rank != loops) rc = fail(&r, "the tiles do not match %s", "the root op's loops");
  }
  for (int i = 0; !rc && i < d->nops; ++i)
    if (!done[i]) rc = run_op(&r, i, done, fault);
  for (int k = d->nbindings; r.t && k < d->nvalues; ++k)
    if (r.t[k].owned) free(r.t[k].data);
  free(r.t);
  free(done);
  return rc;
}

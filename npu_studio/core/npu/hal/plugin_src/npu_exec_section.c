/* A compute section of the program binary (docs/npu-isa.md, "Sections") into npu_dispatch_desc_t.
 *
 * The payload is little-endian i64 words (hal/exec_binary.py writes it); a string or byte blob is
 * its length and its bytes padded to 8. Every count is checked against the bytes left before
 * anything is allocated, every value against the range the interpreter accepts, and a bad word is
 * named by its byte offset in the file. The whole dispatch is then checked by npu_exec_verify.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_exec.h"
#include "npu_isa.h"

#define BIG ((int64_t)1 << 40) /* shapes, ranges, slice numbers: as the interpreter's sizes allow */

typedef struct {
  const unsigned char *p;
  size_t n, pos, base; /* base: the payload's offset in the file */
  char *why;           /* at least 256 bytes */
  size_t *bad_at;
} rd_t;

static int bad(rd_t *r, const char *what) {
  snprintf(r->why, 256, "%s", what);
  *r->bad_at = r->base + r->pos;
  return 0;
}

static int word(rd_t *r, int64_t lo, int64_t hi, int64_t *out, const char *what) {
  if (r->n - r->pos < 8) return bad(r, "truncated compute section");
  int64_t v;
  memcpy(&v, r->p + r->pos, 8);
  if (v < lo || v > hi) {
    char msg[256];
    snprintf(msg, sizeof(msg), "%s: %lld outside %lld..%lld", what, (long long)v, (long long)lo, (long long)hi);
    return bad(r, msg);
  }
  r->pos += 8;
  *out = v;
  return 1;
}

/* A count of items each at least `words` long: never more than the bytes left can hold, so what is
 * allocated for them stays within a few times the file's size. */
static int count_of(rd_t *r, int64_t max, int64_t words, int *out, const char *what) {
  int64_t left = (int64_t)((r->n - r->pos) / 8) / words, v;
  if (!word(r, 0, left < max ? left : max, &v, what)) return 0;
  *out = (int)v;
  return 1;
}

static int count(rd_t *r, int64_t max, int *out, const char *what) {
  int64_t left = (int64_t)((r->n - r->pos) / 8), v;
  if (!word(r, 0, left < max ? left : max, &v, what)) return 0;
  *out = (int)v;
  return 1;
}

/* A list of at most `max` words into `out` (caller's array). */
static int list(rd_t *r, int max, int64_t lo, int64_t hi, int64_t *out, int *n, const char *what) {
  if (!count(r, max, n, what)) return 0;
  for (int i = 0; i < *n; ++i)
    if (!word(r, lo, hi, &out[i], what)) return 0;
  return 1;
}

/* A list of ids into a fresh int array. */
static int ids(rd_t *r, int max, int64_t hi, int **out, int *n, const char *what) {
  if (!count(r, max, n, what)) return 0;
  *out = calloc((size_t)*n + 1, sizeof(int));
  if (!*out) return bad(r, "out of memory");
  for (int i = 0; i < *n; ++i) {
    int64_t v;
    if (!word(r, 0, hi, &v, what)) return 0;
    (*out)[i] = (int)v;
  }
  return 1;
}

/* A blob: its length, then its bytes padded to 8. `copy` NULL: only skipped. */
static int blob(rd_t *r, unsigned char **copy, size_t *size, size_t max, const char *what) {
  int64_t len;
  size_t left = r->n - r->pos >= 8 ? r->n - r->pos - 8 : 0;
  if (!word(r, 0, (int64_t)(left < max ? left : max), &len, what)) return 0;
  size_t padded = (size_t)len + ((8 - (size_t)len % 8) % 8);
  if (padded > r->n - r->pos) return bad(r, "truncated compute section");
  if (copy) {
    *copy = malloc((size_t)len + 1);
    if (!*copy) return bad(r, "out of memory");
    memcpy(*copy, r->p + r->pos, (size_t)len);
    *size = (size_t)len;
  }
  r->pos += padded;
  return 1;
}

static int text(rd_t *r, char *out, size_t cap, const char *what) {
  size_t at = r->pos;
  if (!blob(r, NULL, NULL, (size_t)1 << 20, what)) return 0;
  int64_t len;
  memcpy(&len, r->p + at, 8);
  size_t n = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
  memcpy(out, r->p + at + 8, n);
  out[n] = '\0';
  for (size_t i = 0; i < n; ++i)
    if (out[i] == '\0' || out[i] == '\n') out[i] = ' '; /* a message stays one line */
  return 1;
}

static int elem(rd_t *r, npu_elem_t *out, const char *what) {
  static const npu_elem_t elems[] = {E_F16, E_BF16, E_F32, E_F64, E_I1, E_I8, E_I16, E_I32, E_I64, E_I64};
  int64_t v;
  if (!word(r, 0, 9, &v, what)) return 0;
  *out = elems[v];
  return 1;
}

static int body(rd_t *r, npu_fop_t *f, int nvalues) {
  if (!count_of(r, 4096, 8, &f->nbody, "body count")) return 0; /* a body op is at least 8 words */
  f->body = calloc((size_t)f->nbody + 1, sizeof(npu_body_op_t));
  if (!f->body) return bad(r, "out of memory");
  int base = f->nargs; /* the block's arguments (one per operand), then the body's values */
  for (int k = 0; k < f->nbody; ++k) {
    npu_body_op_t *o = &f->body[k];
    char name[64];
    size_t at = r->pos;
    int64_t args[NPU_MAX_RANK], v;
    if (!text(r, name, sizeof(name), "body op name")) return 0;
    o->op = npu_body_opcode(name);
    if (o->op < 0) { r->pos = at; return bad(r, "unknown body op"); }
    if (!list(r, NPU_MAX_RANK, 0, base + k - 1, args, &o->nargs, "body op args")) return 0;
    for (int i = 0; i < o->nargs; ++i) o->args[i] = (int)args[i];
    if (!elem(r, &o->type, "body op type") || !word(r, -1, BIG, &o->attr, "body op attr")) return 0;
    if (r->n - r->pos < 8) return bad(r, "truncated compute section");
    memcpy(&o->f, r->p + r->pos, 8); /* any double: inf and nan included */
    r->pos += 8;
    if (!word(r, INT64_MIN, INT64_MAX, &o->i, "body op i") || !word(r, 0, 3, &v, "body op rounding")) return 0;
    o->round = (int)v;
    if (!word(r, 0, 1, &v, "body op saturate")) return 0;
    o->saturate = (int)v;
    int reads = o->op == 3 || o->op == npu_body_opcode("extract");
    if (reads && (o->attr < 0 || o->attr >= nvalues)) return bad(r, "body op attr: outer value out of range");
    if (o->op == 2 && (o->attr < 0 || o->attr >= f->n_loops)) return bad(r, "body op attr: index loop out of range");
    int arity = npu_body_arity(o->op);
    if (arity >= 0 && o->nargs != arity) return bad(r, "body op args: the op's semantics read another number");
  }
  return ids(r, 64, base + f->nbody - 1, &f->yields, &f->nyields, "yields");
}

static int maps(rd_t *r, npu_fop_t *f, const npu_dispatch_desc_t *d) {
  int nmaps;
  if (!count(r, 64, &nmaps, "map count")) return 0;
  if (f->kind != F_LINALG) {
    if (nmaps) return bad(r, "maps on an op that is not linalg");
    return 1;
  }
  if (nmaps != f->nargs) return bad(r, "map count: one map per operand expected");
  f->coef = calloc((size_t)nmaps + 1, sizeof(*f->coef));
  if (!f->coef) return bad(r, "out of memory");
  for (int m = 0; m < nmaps; ++m) {
    int rows;
    if (!count(r, NPU_MAX_RANK, &rows, "map rows")) return 0;
    if (rows != d->values[f->args[m]].rank) return bad(r, "map rows: a map's results differ from its operand's rank");
    for (int j = 0; j < rows; ++j) {
      int n;
      if (!list(r, NPU_MAX_LOOPS + 1, -((int64_t)1 << 32), (int64_t)1 << 32, f->coef[m][j], &n, "map row")) return 0;
      if (n != f->n_loops + 1) return bad(r, "map row: one coefficient per loop and a constant expected");
    }
  }
  return 1;
}

static int op(rd_t *r, npu_fop_t *f, const npu_dispatch_desc_t *d) {
  int64_t v, red[NPU_MAX_LOOPS];
  int n1, n2, n3, nred;
  if (!word(r, 0, F_SCALAR, &v, "op kind")) return 0;
  f->kind = (npu_fop_kind_t)v;
  if (!ids(r, 64, d->nvalues - 1, &f->args, &f->nargs, "op args") ||
      !ids(r, 64, d->nvalues - 1, &f->results, &f->nresults, "op results") ||
      !word(r, -1, d->nbindings - 1, &v, "op binding"))
    return 0;
  f->binding = (int)v;
  if (!list(r, NPU_MAX_RANK, -BIG, BIG, f->offsets, &n1, "op offsets") ||
      !list(r, NPU_MAX_RANK, 0, BIG, f->sizes, &n2, "op sizes") ||
      !list(r, NPU_MAX_RANK, 1, BIG, f->strides, &n3, "op strides"))
    return 0;
  f->nslice = n1;
  if ((f->kind == F_LOAD || f->kind == F_STORE || f->kind == F_EXTRACT || f->kind == F_INSERT) && (n1 != n2 || n2 != n3))
    return bad(r, "op slice: offsets, sizes and strides differ in length");
  if ((f->kind == F_LOAD || f->kind == F_STORE) && f->binding < 0) return bad(r, "op binding: required");
  if (!blob(r, f->kind == F_CONST ? &f->data : NULL, &f->data_size, (size_t)1 << 33, "const data")) return 0;
  if (!word(r, 0, 1, &v, "op splat")) return 0;
  f->splat = (int)v;
  if (!word(r, 0, f->nargs, &v, "op n_in")) return 0;
  f->n_in = (int)v;
  /* the loops first: a map's rows are checked against them */
  size_t maps_at = r->pos;
  int nmaps;
  if (!count(r, 64, &nmaps, "map count")) return 0;
  for (int m = 0; m < nmaps; ++m) { /* skip over the maps, checking only their framing */
    int rows, n;
    int64_t row[NPU_MAX_LOOPS + 1];
    if (!count(r, NPU_MAX_RANK, &rows, "map rows")) return 0;
    for (int j = 0; j < rows; ++j)
      if (!list(r, NPU_MAX_LOOPS + 1, -((int64_t)1 << 32), (int64_t)1 << 32, row, &n, "map row")) return 0;
  }
  if (!list(r, NPU_MAX_LOOPS, 0, 1, red, &nred, "op reduction")) return 0;
  if (!list(r, NPU_MAX_LOOPS, 0, BIG, f->ranges, &f->n_loops, "op ranges")) return 0;
  for (int i = 0; i < nred; ++i) f->reduction[i] = (int)red[i];
  if (f->kind == F_LINALG && nred != f->n_loops) return bad(r, "op reduction: one flag per loop expected");
  size_t after = r->pos;
  r->pos = maps_at;
  if (!maps(r, f, d)) return 0;
  r->pos = after;
  if (f->kind == F_LINALG && f->nresults != f->nargs - f->n_in) return bad(r, "op results: one per output expected");
  if (f->kind == F_LINALG || f->kind == F_SCALAR) {
    if (!body(r, f, d->nvalues)) return 0;
  } else {
    int none;
    int *yields = NULL;
    if (!count(r, 0, &none, "body count (this op has no body)")) return 0;
    if (!ids(r, 0, 0, &yields, &none, "yields (this op has no body)")) return 0;
    free(yields);
  }
  if (!word(r, 0, NPU_MAX_RANK - 1, &v, "op dim")) return 0;
  f->dim = (int)v;
  return 1;
}

int npu_section_decode(const unsigned char *payload, size_t size, size_t base, npu_dispatch_desc_t *d, char *why,
                       size_t *bad_at) {
  rd_t r = {payload, size, 0, base, why, bad_at};
  int64_t v;
  if (!text(&r, d->symbol, sizeof(d->symbol), "symbol") || !text(&r, d->reason, sizeof(d->reason), "reason")) return 0;
  if (d->reason[0]) /* described by its reason alone */
    return r.pos == r.n ? 1 : bad(&r, "words after a reason");
  if (!word(&r, 0, NPU_MAX_BINDINGS, &v, "bindings") || !count_of(&r, 1 << 20, 2, &d->nvalues, "value count"))
    return 0; /* a value is at least 2 words, an op 15 */
  d->nbindings = (int)v;
  if (d->nbindings > d->nvalues) return bad(&r, "bindings: more than the values");
  d->values = calloc((size_t)d->nvalues + 1, sizeof(npu_vtype_t));
  if (!d->values) return bad(&r, "out of memory");
  for (int k = 0; k < d->nvalues; ++k) {
    npu_vtype_t *t = &d->values[k];
    if (!elem(&r, &t->elem, "value element") || !list(&r, NPU_MAX_RANK, 0, BIG, t->shape, &t->rank, "value shape"))
      return 0;
    t->count = 1;
    for (int j = 0; j < t->rank; ++j) {
      if (t->shape[j] && t->count > BIG / t->shape[j]) return bad(&r, "value shape: too large");
      t->count *= t->shape[j];
    }
  }
  if (!count_of(&r, 1 << 20, 15, &d->nops, "op count")) return 0;
  d->ops = calloc((size_t)d->nops + 1, sizeof(npu_fop_t));
  if (!d->ops) return bad(&r, "out of memory");
  for (int k = 0; k < d->nops; ++k)
    if (!op(&r, &d->ops[k], d)) return 0;
  if (!word(&r, -1, d->nops - 1, &v, "root")) return 0;
  d->root = (int)v;
  if (!ids(&r, 1 << 10, d->nops - 1, &d->epilogue, &d->nepilogue, "epilogue")) return 0;
  return r.pos == r.n ? 1 : bad(&r, "bytes after the end of the compute section");
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

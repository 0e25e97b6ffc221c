/* Element types and the scalar semantics of the arith/math ops in a linalg body.
 *
 * A float value is held as a double already rounded to its type (f16 and
 * bf16 round to nearest even, as numpy's casts do), an integer as int64
 * wrapped to its width (signless, held signed; the unsigned ops view it
 * unsigned). f32 arithmetic done in double and rounded once equals f32
 * arithmetic for + - * / and sqrt.
 */
#include <math.h>
#include <string.h>

#include "npu_exec.h"

enum {
  B_ARG = 0, B_CONST, B_INDEX, B_OUTER,
  B_ADDF, B_SUBF, B_MULF, B_DIVF, B_REMF, B_NEGF, B_MAXIMUMF, B_MINIMUMF, B_MAXNUMF, B_MINNUMF,
  B_ADDI, B_SUBI, B_MULI, B_DIVSI, B_DIVUI, B_REMSI, B_REMUI, B_ANDI, B_ORI, B_XORI, B_MAXSI, B_MINSI,
  B_MAXUI, B_MINUI, B_SHLI, B_SHRSI, B_SHRUI, B_FLOORDIVSI, B_CEILDIVSI, B_SELECT, B_CMPF, B_CMPI,
  B_EXTF, B_TRUNCF, B_EXTSI, B_EXTUI, B_TRUNCI, B_SITOFP, B_UITOFP, B_FPTOSI, B_FPTOUI, B_INDEX_CAST,
  B_INDEX_CASTUI,
  B_EXP, B_EXP2, B_EXPM1, B_LOG, B_LOG2, B_LOG10, B_LOG1P, B_TANH, B_SINH, B_COSH, B_SIN, B_COS, B_TAN,
  B_ASIN, B_ACOS, B_ATAN, B_ATAN2, B_SQRT, B_RSQRT, B_CBRT, B_ABSF, B_ABSI, B_FLOOR, B_CEIL, B_TRUNC,
  B_ROUND, B_ROUNDEVEN, B_POWF, B_COPYSIGN, B_FMA, B_ERF, B_FPOWI, B_EXTRACT, B_COUNT
};

static const char *const NAMES[B_COUNT] = {
  "arg", "const", "index", "outer",
  "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf", "arith.maximumf",
  "arith.minimumf", "arith.maxnumf", "arith.minnumf",
  "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
  "arith.andi", "arith.ori", "arith.xori", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
  "arith.shli", "arith.shrsi", "arith.shrui", "arith.floordivsi", "arith.ceildivsi", "arith.select",
  "arith.cmpf", "arith.cmpi", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci",
  "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.index_cast", "arith.index_castui",
  "math.exp", "math.exp2", "math.expm1", "math.log", "math.log2", "math.log10", "math.log1p", "math.tanh",
  "math.sinh", "math.cosh", "math.sin", "math.cos", "math.tan", "math.asin", "math.acos", "math.atan",
  "math.atan2", "math.sqrt", "math.rsqrt", "math.cbrt", "math.absf", "math.absi", "math.floor", "math.ceil",
  "math.trunc", "math.round", "math.roundeven", "math.powf", "math.copysign", "math.fma", "math.erf",
  "math.fpowi", "extract",
};

int npu_body_arity(int op) {
  switch (op) {
    case B_CONST: case B_INDEX: case B_OUTER: return 0;
    case B_EXTRACT: return -1;
    case B_SELECT: case B_FMA: return 3;
    case B_ADDF: case B_SUBF: case B_MULF: case B_DIVF: case B_REMF: case B_MAXIMUMF: case B_MINIMUMF:
    case B_MAXNUMF: case B_MINNUMF: case B_ADDI: case B_SUBI: case B_MULI: case B_DIVSI: case B_DIVUI:
    case B_REMSI: case B_REMUI: case B_ANDI: case B_ORI: case B_XORI: case B_MAXSI: case B_MINSI: case B_MAXUI:
    case B_MINUI: case B_SHLI: case B_SHRSI: case B_SHRUI: case B_FLOORDIVSI: case B_CEILDIVSI: case B_CMPF:
    case B_CMPI: case B_ATAN2: case B_POWF: case B_COPYSIGN: case B_FPOWI: return 2;
    case B_ARG: return 99; /* never in a body: refused */
    default: return 1;
  }
}

int64_t npu_double_to_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

int npu_body_opcode(const char *name) {
  for (int k = 0; k < B_COUNT; ++k)
    if (strcmp(NAMES[k], name) == 0) return k;
  return -1;
}

size_t npu_elem_size(npu_elem_t e) {
  switch (e) {
    case E_F16: case E_BF16: case E_I16: return 2;
    case E_F32: case E_I32: return 4;
    case E_F64: case E_I64: return 8;
    default: return 1;
  }
}

int npu_elem_is_float(npu_elem_t e) { return e == E_F16 || e == E_BF16 || e == E_F32 || e == E_F64; }

static int bits(npu_elem_t e) { return e == E_I1 ? 1 : (int)(8 * npu_elem_size(e)); }

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, out;
  if (exp == 0) {
    if (man == 0) {
      out = sign;
    } else { /* subnormal: normalize */
      int shift = 0;
      while (!(man & 0x400)) man <<= 1, shift++;
      out = sign | ((uint32_t)(113 - shift) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (man << 13);
  } else {
    out = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &out, 4);
  return f;
}

static uint16_t float_to_half(float f) { /* round to nearest even */
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    man |= 0x800000;
    int shift = 14 - exp;
    uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++; /* may carry into the exponent: right */
  return (uint16_t)(sign | half);
}

static float bf16_to_float(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

double npu_round_to(npu_elem_t e, double v) {
  switch (e) {
    case E_F32: return (double)(float)v;
    case E_F16: return half_to_float(float_to_half((float)v));
    case E_BF16: return bf16_to_float(float_to_bf16((float)v));
    default: return v;
  }
}

int64_t npu_wrap_to(npu_elem_t e, int64_t v) {
  switch (e) {
    case E_I1: return v & 1;
    case E_I8: return (int8_t)v;
    case E_I16: return (int16_t)v;
    case E_I32: return (int32_t)v;
    default: return v;
  }
}

double npu_load_f(npu_elem_t e, const unsigned char *p) {
  uint16_t h;
  float f;
  double d;
  switch (e) {
    case E_F16: memcpy(&h, p, 2); return half_to_float(h);
    case E_BF16: memcpy(&h, p, 2); return bf16_to_float(h);
    case E_F32: memcpy(&f, p, 4); return f;
    case E_F64: memcpy(&d, p, 8); return d;
    default: return (double)npu_load_i(e, p);
  }
}

int64_t npu_load_i(npu_elem_t e, const unsigned char *p) {
  int8_t b; int16_t s; int32_t w; int64_t q;
  switch (e) {
    case E_I1: return p[0] & 1;
    case E_I8: memcpy(&b, p, 1); return b;
    case E_I16: memcpy(&s, p, 2); return s;
    case E_I32: memcpy(&w, p, 4); return w;
    case E_I64: memcpy(&q, p, 8); return q;
    default: return npu_double_to_i64(npu_load_f(e, p));
  }
}

void npu_store_f(npu_elem_t e, unsigned char *p, double v) {
  uint16_t h;
  float f = (float)v;
  switch (e) {
    case E_F16: h = float_to_half(f); memcpy(p, &h, 2); return;
    case E_BF16: h = float_to_bf16(f); memcpy(p, &h, 2); return;
    case E_F32: memcpy(p, &f, 4); return;
    case E_F64: memcpy(p, &v, 8); return;
    default: npu_store_i(e, p, npu_double_to_i64(v));
  }
}

void npu_store_i(npu_elem_t e, unsigned char *p, int64_t v) {
  int8_t b = (int8_t)v; int16_t s = (int16_t)v; int32_t w = (int32_t)v;
  switch (e) {
    case E_I1: p[0] = (unsigned char)(v & 1); return;
    case E_I8: memcpy(p, &b, 1); return;
    case E_I16: memcpy(p, &s, 2); return;
    case E_I32: memcpy(p, &w, 4); return;
    case E_I64: memcpy(p, &v, 8); return;
    default: npu_store_f(e, p, (double)v);
  }
}

static uint64_t unsigned_of(npu_elem_t e, int64_t v) {
  int b = bits(e);
  return b >= 64 ? (uint64_t)v : ((uint64_t)v & ((1ull << b) - 1));
}

static double round_half_even(double x) {
  double r = nearbyint(x); /* the default rounding mode: to nearest, ties to even */
  return r;
}

static double round_mode(int mode, double x) {
  switch (mode) {
    case 2: return round(x);
    case 3: return trunc(x);
    default: return round_half_even(x);
  }
}

static int cmpf(int64_t predicate, double a, double b) {
  int unordered = isnan(a) || isnan(b);
  switch (predicate) {
    case 0: return 0;
    case 1: return !unordered && a == b;
    case 2: return !unordered && a > b;
    case 3: return !unordered && a >= b;
    case 4: return !unordered && a < b;
    case 5: return !unordered && a <= b;
    case 6: return !unordered && a != b;
    case 7: return !unordered;
    case 8: return unordered || a == b;
    case 9: return unordered || a > b;
    case 10: return unordered || a >= b;
    case 11: return unordered || a < b;
    case 12: return unordered || a <= b;
    case 13: return unordered || a != b;
    case 14: return unordered;
    default: return 1;
  }
}

static int cmpi(int64_t predicate, int64_t a, int64_t b, npu_elem_t e) {
  uint64_t ua = unsigned_of(e, a), ub = unsigned_of(e, b);
  switch (predicate) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a >= b;
    case 6: return ua < ub;
    case 7: return ua <= ub;
    case 8: return ua > ub;
    default: return ua >= ub;
  }
}

/* Signed division as the hardware's: x / 0 is 0 (MLIR leaves it undefined), INT64_MIN / -1 wraps. */
static int64_t sdiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  return a / b;
}

static int64_t srem(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }

/* A float to an integer type: saturated to the type's range (the stage's narrowing), else through int64. */
static int64_t to_int(double x, npu_elem_t to, int is_unsigned, int saturate) {
  if (isnan(x)) return 0;
  int b = bits(to);
  double lo = is_unsigned ? 0.0 : (b >= 64 ? -9.2233720368547758e18 : -ldexp(1.0, b - 1));
  double hi = is_unsigned ? (b >= 64 ? 1.8446744073709552e19 : ldexp(1.0, b) - 1)
                          : (b >= 64 ? 9.2233720368547748e18 : ldexp(1.0, b - 1) - 1);
  if (!saturate) lo = -9.2233720368547758e18, hi = 9.2233720368547748e18;
  x = x < lo ? lo : (x > hi ? hi : x);
  if (is_unsigned && x >= 9.2233720368547758e18) /* below 2^64 after the clamp: the cast is defined */
    return npu_wrap_to(to, (int64_t)(uint64_t)(x < 1.8446744073709550e19 ? x : 1.8446744073709550e19));
  return npu_wrap_to(to, npu_double_to_i64(trunc(x)));
}

npu_scalar_t npu_body_eval(const npu_body_op_t *op, const npu_scalar_t *vals, const npu_elem_t *types,
                           const int64_t *loop) {
  npu_scalar_t r = {0};
  const npu_scalar_t a = op->nargs > 0 ? vals[op->args[0]] : r;
  const npu_scalar_t b = op->nargs > 1 ? vals[op->args[1]] : r;
  const npu_scalar_t c = op->nargs > 2 ? vals[op->args[2]] : r;
  npu_elem_t in = op->nargs > 0 ? types[op->args[0]] : op->type, t = op->type;
  int fl = npu_elem_is_float(t);
  double x = a.f, y = b.f;
  switch (op->op) {
    case B_CONST: if (fl) r.f = npu_round_to(t, op->f); else r.i = npu_wrap_to(t, op->i); return r;
    case B_INDEX: r.i = loop[op->attr]; return r;
    case B_ADDF: r.f = x + y; break;
    case B_SUBF: r.f = x - y; break;
    case B_MULF: r.f = x * y; break;
    case B_DIVF: r.f = x / y; break;
    case B_REMF: r.f = fmod(x, y); break;
    case B_NEGF: r.f = -x; break;
    case B_MAXIMUMF: r.f = (isnan(x) || isnan(y)) ? NAN : (x > y ? x : y); break;
    case B_MINIMUMF: r.f = (isnan(x) || isnan(y)) ? NAN : (x < y ? x : y); break;
    case B_MAXNUMF: r.f = fmax(x, y); break;
    case B_MINNUMF: r.f = fmin(x, y); break;
    case B_ADDI: r.i = (int64_t)((uint64_t)a.i + (uint64_t)b.i); break;
    case B_SUBI: r.i = (int64_t)((uint64_t)a.i - (uint64_t)b.i); break;
    case B_MULI: r.i = (int64_t)((uint64_t)a.i * (uint64_t)b.i); break;
    case B_DIVSI: r.i = sdiv(a.i, b.i); break;
    case B_DIVUI: r.i = b.i ? (int64_t)(unsigned_of(in, a.i) / unsigned_of(in, b.i)) : 0; break;
    case B_REMSI: r.i = srem(a.i, b.i); break;
    case B_REMUI: r.i = b.i ? (int64_t)(unsigned_of(in, a.i) % unsigned_of(in, b.i)) : 0; break;
    case B_ANDI: r.i = a.i & b.i; break;
    case B_ORI: r.i = a.i | b.i; break;
    case B_XORI: r.i = a.i ^ b.i; break;
    case B_MAXSI: r.i = a.i > b.i ? a.i : b.i; break;
    case B_MINSI: r.i = a.i < b.i ? a.i : b.i; break;
    case B_MAXUI: r.i = unsigned_of(in, a.i) > unsigned_of(in, b.i) ? a.i : b.i; break;
    case B_MINUI: r.i = unsigned_of(in, a.i) < unsigned_of(in, b.i) ? a.i : b.i; break;
    case B_SHLI: r.i = (b.i >= 0 && b.i < 64) ? (int64_t)((uint64_t)a.i << b.i) : 0; break;
    case B_SHRSI: r.i = (b.i >= 0 && b.i < 64) ? a.i >> b.i : (a.i < 0 ? -1 : 0); break;
    case B_SHRUI: r.i = (b.i >= 0 && b.i < 64) ? (int64_t)(unsigned_of(in, a.i) >> b.i) : 0; break;
    case B_FLOORDIVSI: r.i = sdiv(a.i, b.i) - (srem(a.i, b.i) != 0 && ((a.i < 0) != (b.i < 0))); break;
    case B_CEILDIVSI: r.i = sdiv(a.i, b.i) + (srem(a.i, b.i) != 0 && ((a.i < 0) == (b.i < 0))); break;
    case B_SELECT: return a.i ? b : c;
    case B_CMPF: r.i = cmpf(op->attr, x, y); return r;
    case B_CMPI: r.i = cmpi(op->attr, a.i, b.i, in); return r;
    case B_EXTF: case B_TRUNCF: r.f = x; break;
    case B_EXTSI: case B_TRUNCI: case B_INDEX_CAST: r.i = a.i; break;
    case B_EXTUI: case B_INDEX_CASTUI: r.i = (int64_t)unsigned_of(in, a.i); break;
    case B_SITOFP: r.f = (double)a.i; break;
    case B_UITOFP: r.f = (double)unsigned_of(in, a.i); break;
    case B_FPTOSI: r.i = to_int(x, t, 0, op->saturate); return r;
    case B_FPTOUI: r.i = to_int(x, t, 1, op->saturate); return r;
    case B_EXP: r.f = exp(x); break;
    case B_EXP2: r.f = exp2(x); break;
    case B_EXPM1: r.f = expm1(x); break;
    case B_LOG: r.f = log(x); break;
    case B_LOG2: r.f = log2(x); break;
    case B_LOG10: r.f = log10(x); break;
    case B_LOG1P: r.f = log1p(x); break;
    case B_TANH: r.f = tanh(x); break;
    case B_SINH: r.f = sinh(x); break;
    case B_COSH: r.f = cosh(x); break;
    case B_SIN: r.f = sin(x); break;
    case B_COS: r.f = cos(x); break;
    case B_TAN: r.f = tan(x); break;
    case B_ASIN: r.f = asin(x); break;
    case B_ACOS: r.f = acos(x); break;
    case B_ATAN: r.f = atan(x); break;
    case B_ATAN2: r.f = atan2(x, y); break;
    case B_SQRT: r.f = sqrt(x); break;
    case B_RSQRT: r.f = 1.0 / sqrt(x); break;
    case B_CBRT: r.f = cbrt(x); break;
    case B_ABSF: r.f = fabs(x); break;
    case B_ABSI: r.i = a.i < 0 ? (int64_t)(0 - (uint64_t)a.i) : a.i; break;
    case B_FLOOR: r.f = floor(x); break;
    case B_CEIL: r.f = ceil(x); break;
    case B_TRUNC: r.f = op->round ? round_mode(op->round, x) : trunc(x); break;
    case B_ROUND: r.f = op->round ? round_mode(op->round, x) : round(x); break;
    case B_ROUNDEVEN: r.f = op->round ? round_mode(op->round, x) : round_half_even(x); break;
    case B_POWF: r.f = pow(x, y); break;
    case B_COPYSIGN: r.f = copysign(x, y); break;
    case B_FMA: r.f = x * y + c.f; break;
    case B_ERF: r.f = erf(x); break;
    case B_FPOWI: r.f = pow(x, (double)b.i); break;
    default: break;
  }
  if (fl) r.f = npu_round_to(t, r.f);
  else r.i = npu_wrap_to(t, r.i);
  return r;
}

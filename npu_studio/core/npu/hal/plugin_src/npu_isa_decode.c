/* Reading the program binary (docs/npu-isa.md) into npu_exec_program_t, all of it checked first.
 *
 * Order: the header (magic, version, sizes against the file's), the body's CRC-32, the string
 * table, every instruction (opcode, engine, operand count, each field against its kind and
 * table), what each instruction addresses (a DMA's strided and padded extent inside a buffer
 * declared before it, in the memory the instruction names; a wait only on work already listed,
 * so no order of completion deadlocks), then every compute section (npu_exec_section.c) with
 * its dispatch's tiles taken from the dispatch's `.task` directives, then each dispatch as a whole
 * (npu_exec_verify.c). Nothing is executed before all of that passed; the first failure is one
 * line naming the file and the byte offset. Sizes in the file are compared with the bytes that
 * are there before anything is allocated for them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_isa.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the binary is little-endian and read with memcpy: a big-endian host needs byte swaps here"
#endif

#define MAX_FILE ((long)1 << 31)
#define MAX_ADDR ((uint64_t)1 << 48) /* addresses and sizes: far beyond any DRAM or SRAM, far from wrapping */
#define MAX_COUNT ((uint64_t)1 << 40)

typedef struct {
  uint64_t addr, size;
  int placement;
} buf_t;

typedef struct {
  uint32_t dispatch;
  int rank;
  size_t at;
  int64_t off[NPU_MAX_LOOPS], size[NPU_MAX_LOOPS];
} task_t;

typedef struct {
  const char *path;
  char *error;
  const unsigned char *data;
  size_t end; /* header + body */
  uint32_t nstrings;
  buf_t *bufs;
  size_t nbufs, capbufs;
  task_t *tasks;
  size_t ntasks, captasks;
  uint64_t done[256]; /* per engine code: its work instructions listed so far */
} dec_t;

/* One decoded instruction: where each field's first operand sits. */
typedef struct {
  const npu_isa_op_t *op;
  int engine;
  uint32_t dispatch, task;
  const unsigned char *operands;
  size_t at; /* the record's offset */
  int n, field[NPU_ISA_MAX_FIELDS];
} ins_t;

static int fail(dec_t *d, size_t at, const char *fmt, ...) {
  char why[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  snprintf(d->error, 512, "%s: offset %zu: %s", d->path, at, why);
  return 0;
}

static uint64_t u64at(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t u32at(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t u16at(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

static uint32_t crc32_of(const unsigned char *p, size_t n) { /* zlib's: IEEE polynomial, reflected */
  static uint32_t table[256];
  static int ready = 0;
  if (!ready) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = 1;
  }
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

static uint64_t field(const ins_t *in, int f) { return u64at(in->operands + 8 * (size_t)in->field[f]); }
static size_t field_at(const ins_t *in, int f) { return in->at + NPU_ISA_RECORD_HEAD + 8 * (size_t)in->field[f]; }

static int engine_allowed(int runs, int e) {
  switch (runs) {
    case NPU_RUNS_NONE: return e == NPU_ISA_ENGINE_NONE;
    case NPU_RUNS_ANY: return e < NPU_ISA_MAX_DMA || (e >= NPU_ISA_ENGINE_MAC && e <= NPU_ISA_ENGINE_CPU);
    case NPU_RUNS_DMA: return e < NPU_ISA_MAX_DMA;
    case NPU_RUNS_MAC: return e == NPU_ISA_ENGINE_MAC;
    case NPU_RUNS_VEC: return e == NPU_ISA_ENGINE_VEC;
    default: return e == NPU_ISA_ENGINE_CPU;
  }
}

/* The record at `pos`: head, opcode, engine and every field against its kind. */
static int decode_record(dec_t *d, size_t pos, ins_t *in, size_t *next) {
  if (d->end - pos < NPU_ISA_RECORD_HEAD)
    return fail(d, pos, "truncated: an instruction needs %d bytes, %zu left", NPU_ISA_RECORD_HEAD, d->end - pos);
  const unsigned char *p = d->data + pos;
  in->op = NULL, in->at = pos;
  for (int k = 0; k < NPU_ISA_NOPS; ++k)
    if (NPU_ISA_OPS[k].code == p[0]) in->op = &NPU_ISA_OPS[k];
  if (!in->op) return fail(d, pos, "unknown opcode 0x%02x", p[0]);
  const char *m = in->op->mnemonic;
  in->engine = p[1], in->n = u16at(p + 2), in->dispatch = u32at(p + 4), in->task = u32at(p + 8);
  if (!engine_allowed(in->op->runs, in->engine)) return fail(d, pos + 1, "%s: engine code %d cannot run it", m, in->engine);
  if (in->n > NPU_ISA_MAX_OPERANDS || (size_t)in->n * 8 > d->end - pos - NPU_ISA_RECORD_HEAD)
    return fail(d, pos + 2, "%s: %d operands run past the end", m, in->n);
  if (in->dispatch == NPU_ISA_NO_TAG && in->task != NPU_ISA_NO_TAG) return fail(d, pos + 8, "%s: a task with no dispatch", m);
  in->operands = p + NPU_ISA_RECORD_HEAD;
  int i = 0;
  for (int f = 0; f < in->op->nfields; ++f) {
    size_t at = pos + NPU_ISA_RECORD_HEAD + 8 * (size_t)i;
    if (i >= in->n) return fail(d, pos + 2, "%s: %d operands, its fields need more", m, in->n);
    in->field[f] = i;
    uint64_t v = u64at(in->operands + 8 * (size_t)i++);
    switch (in->op->kinds[f]) {
      case 'e':
        if (v >= (uint64_t)in->op->enum_size[f]) return fail(d, at, "%s field %d: code %llu is not in its table", m, f, (unsigned long long)v);
        break;
      case 'g':
        if (v == NPU_ISA_ENGINE_NONE || !engine_allowed(NPU_RUNS_ANY, v > 255 ? NPU_ISA_ENGINE_NONE : (int)v))
          return fail(d, at, "%s field %d: no engine has code %llu", m, f, (unsigned long long)v);
        break;
      case 's':
        if (v >= d->nstrings) return fail(d, at, "%s field %d: string %llu of %u", m, f, (unsigned long long)v, d->nstrings);
        break;
      case 'm':
        if (v >> NPU_ISA_FUNCTIONS) return fail(d, at, "%s field %d: bits beyond the %d functions", m, f, NPU_ISA_FUNCTIONS);
        break;
      case 'l':
      case 'i':
        if (v > (uint64_t)(in->n - i)) return fail(d, at, "%s field %d: %llu items, %d operands left", m, f, (unsigned long long)v, in->n - i);
        i += (int)v;
        break;
      default: break; /* uint, addr: any value; their meaning is checked below */
    }
  }
  if (i != in->n) return fail(d, pos + 2, "%s: %d operands, its fields take %d", m, in->n, i);
  *next = pos + NPU_ISA_RECORD_HEAD + 8 * (size_t)in->n;
  return 1;
}

/* [addr, addr + extent) inside one buffer declared earlier in `placement` (-1: either memory). */
static int inside(dec_t *d, uint64_t addr, uint64_t extent, int placement) {
  for (size_t k = 0; k < d->nbufs; ++k) {
    const buf_t *b = &d->bufs[k];
    if ((placement < 0 || b->placement == placement) && addr >= b->addr && addr - b->addr <= b->size &&
        extent <= b->size - (addr - b->addr))
      return 1;
  }
  return 0;
}

static int address(dec_t *d, const ins_t *in, int f, uint64_t extent, int placement) {
  uint64_t addr = field(in, f);
  if (addr > MAX_ADDR || extent > MAX_ADDR || !inside(d, addr, extent, placement))
    return fail(d, field_at(in, f), "%s: 0x%llx .. +%llu bytes is inside no %s buffer declared before it",
                in->op->mnemonic, (unsigned long long)addr, (unsigned long long)extent,
                placement == NPU_ISA_PLACEMENT_DRAM ? "DRAM" : placement == NPU_ISA_PLACEMENT_SRAM ? "SRAM" : "");
  return 1;
}

/* Every address of a list field inside a declared buffer (its extent is the instruction's own). */
static int address_list(dec_t *d, const ins_t *in, int f, int placement) {
  uint64_t n = field(in, f);
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t addr = u64at(in->operands + 8 * ((size_t)in->field[f] + 1 + k));
    if (addr > MAX_ADDR || !inside(d, addr, 0, placement))
      return fail(d, field_at(in, f) + 8 * (1 + k), "%s: address 0x%llx is inside no buffer declared before it",
                  in->op->mnemonic, (unsigned long long)addr);
  }
  return 1;
}

static int counts(dec_t *d, const ins_t *in, int first, int last) {
  for (int f = first; f <= last; ++f)
    if (field(in, f) > MAX_COUNT) return fail(d, field_at(in, f), "%s: %llu is over 2^40", in->op->mnemonic, (unsigned long long)field(in, f));
  return 1;
}

/* rows of `row` bytes, `pitch` apart: the bytes from the first to the end of the last (each <= 2^40;
 * a product past 64 bits is UINT64_MAX, which no buffer holds). */
static uint64_t span(uint64_t rows, uint64_t row, uint64_t pitch) {
  uint64_t out;
  if (!rows) return 0;
  if (__builtin_mul_overflow(rows - 1, pitch, &out) || __builtin_add_overflow(out, row, &out)) return UINT64_MAX;
  return out;
}

static int check_dma_load(dec_t *d, const ins_t *in) {
  if (!counts(d, in, NPU_F_DMA_LOAD_ROWS, NPU_F_DMA_LOAD_ESIZE)) return 0;
  uint64_t rows = field(in, NPU_F_DMA_LOAD_ROWS), row = field(in, NPU_F_DMA_LOAD_ROW);
  uint64_t top = field(in, NPU_F_DMA_LOAD_TOP), bottom = field(in, NPU_F_DMA_LOAD_BOTTOM);
  uint64_t left = field(in, NPU_F_DMA_LOAD_LEFT), right = field(in, NPU_F_DMA_LOAD_RIGHT);
  uint64_t esize = field(in, NPU_F_DMA_LOAD_ESIZE), pad = field(in, NPU_F_DMA_LOAD_PAD);
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
    return fail(d, field_at(in, NPU_F_DMA_LOAD_ESIZE), "dma.load: element size %llu (1, 2, 4 or 8)", (unsigned long long)esize);
  if (left % esize || right % esize)
    return fail(d, field_at(in, NPU_F_DMA_LOAD_LEFT), "dma.load: padding is not whole elements of %llu bytes", (unsigned long long)esize);
  if (esize < 8 && pad >> (8 * esize))
    return fail(d, field_at(in, NPU_F_DMA_LOAD_PAD), "dma.load: pad value wider than its %llu-byte element", (unsigned long long)esize);
  uint64_t width = left + row + right, height = top + rows + bottom, sram; /* each < 2^42 */
  if (__builtin_mul_overflow(width, height, &sram))
    return fail(d, field_at(in, NPU_F_DMA_LOAD_ROWS), "dma.load: padded block too large");
  return address(d, in, NPU_F_DMA_LOAD_SRC, span(rows, row, field(in, NPU_F_DMA_LOAD_STRIDE)), NPU_ISA_PLACEMENT_DRAM) &&
         address(d, in, NPU_F_DMA_LOAD_DST, sram, NPU_ISA_PLACEMENT_SRAM);
}

static int check_dma_store(dec_t *d, const ins_t *in) {
  if (!counts(d, in, NPU_F_DMA_STORE_ROWS, NPU_F_DMA_STORE_PITCH)) return 0;
  uint64_t rows = field(in, NPU_F_DMA_STORE_ROWS), row = field(in, NPU_F_DMA_STORE_ROW);
  uint64_t stride = field(in, NPU_F_DMA_STORE_STRIDE), pitch = field(in, NPU_F_DMA_STORE_PITCH);
  if (rows > 1 && (stride < row || pitch < row))
    return fail(d, field_at(in, NPU_F_DMA_STORE_STRIDE), "dma.store: rows overlap (stride or pitch under the row)");
  return address(d, in, NPU_F_DMA_STORE_SRC, span(rows, row, pitch), NPU_ISA_PLACEMENT_SRAM) &&
         address(d, in, NPU_F_DMA_STORE_DST, span(rows, row, stride), NPU_ISA_PLACEMENT_DRAM);
}

static int grow(void **items, size_t *cap, size_t n, size_t each) {
  if (n < *cap) return 1;
  size_t more = *cap ? 2 * *cap : 64;
  void *p = realloc(*items, more * each);
  if (!p) return 0;
  *items = p, *cap = more;
  return 1;
}

/* What an instruction means, against the buffers and the work listed before it. */
static int check_meaning(dec_t *d, const ins_t *in) {
  const char *m = in->op->mnemonic;
  switch (in->op->code) {
    case NPU_OP_DIR_DISPATCH:
      if (field(in, NPU_F_DIR_DISPATCH_INDEX) != in->dispatch) return fail(d, in->at + 4, ".dispatch: tagged with another dispatch than its index");
      return 1;
    case NPU_OP_DIR_BUFFER: {
      uint64_t addr = field(in, NPU_F_DIR_BUFFER_ADDR), size = field(in, NPU_F_DIR_BUFFER_SIZE);
      if (addr > MAX_ADDR || size > MAX_ADDR) return fail(d, field_at(in, NPU_F_DIR_BUFFER_ADDR), ".buffer: address or size over 2^48");
      if (!grow((void **)&d->bufs, &d->capbufs, d->nbufs, sizeof(buf_t))) return fail(d, in->at, "out of memory");
      d->bufs[d->nbufs++] = (buf_t){addr, size, (int)field(in, NPU_F_DIR_BUFFER_PLACEMENT)};
      return 1;
    }
    case NPU_OP_DIR_TASK: {
      uint64_t n = field(in, NPU_F_DIR_TASK_OFFSETS);
      if (in->dispatch == NPU_ISA_NO_TAG) return fail(d, in->at + 4, ".task: no dispatch");
      if (n > NPU_MAX_LOOPS || field(in, NPU_F_DIR_TASK_SIZES) != n)
        return fail(d, field_at(in, NPU_F_DIR_TASK_SIZES), ".task: %llu offsets and %llu sizes (equal, at most %d)",
                    (unsigned long long)n, (unsigned long long)field(in, NPU_F_DIR_TASK_SIZES), NPU_MAX_LOOPS);
      if (!grow((void **)&d->tasks, &d->captasks, d->ntasks, sizeof(task_t))) return fail(d, in->at, "out of memory");
      task_t *t = &d->tasks[d->ntasks++];
      t->dispatch = in->dispatch, t->rank = (int)n, t->at = in->at;
      for (uint64_t l = 0; l < n; ++l) {
        uint64_t off = u64at(in->operands + 8 * ((size_t)in->field[0] + 1 + l));
        uint64_t size = u64at(in->operands + 8 * ((size_t)in->field[1] + 1 + l));
        if (off > (uint64_t)NPU_MAX_JSON_INT || size > (uint64_t)NPU_MAX_JSON_INT)
          return fail(d, field_at(in, 0), ".task: a tile offset or size over 2^53");
        t->off[l] = (int64_t)off, t->size[l] = (int64_t)size;
      }
      return 1;
    }
    case NPU_OP_DMA_LOAD: return check_dma_load(d, in);
    case NPU_OP_DMA_STORE: return check_dma_store(d, in);
    case NPU_OP_DMA_COPY:
      return counts(d, in, NPU_F_DMA_COPY_READ, NPU_F_DMA_COPY_WRITTEN) &&
             address_list(d, in, NPU_F_DMA_COPY_DST, NPU_ISA_PLACEMENT_DRAM) &&
             address_list(d, in, NPU_F_DMA_COPY_SRC, NPU_ISA_PLACEMENT_DRAM);
    case NPU_OP_MAC_TILE:
      return address_list(d, in, NPU_F_MAC_TILE_DST, -1) && address_list(d, in, NPU_F_MAC_TILE_SRC, -1);
    case NPU_OP_VEC_OP:
      return address_list(d, in, NPU_F_VEC_OP_DST, -1) && address_list(d, in, NPU_F_VEC_OP_SRC, -1);
    case NPU_OP_CPU_CALL:
      return address_list(d, in, NPU_F_CPU_CALL_DST, NPU_ISA_PLACEMENT_DRAM) &&
             address_list(d, in, NPU_F_CPU_CALL_SRC, NPU_ISA_PLACEMENT_DRAM);
    case NPU_OP_SEM_WAIT: {
      uint64_t on = field(in, NPU_F_SEM_WAIT_ON), count = field(in, NPU_F_SEM_WAIT_COUNT);
      if (count > d->done[on]) /* `on` < 256: checked as an engine field */
        return fail(d, field_at(in, NPU_F_SEM_WAIT_COUNT), "%s: waits for instruction %llu of an engine with %llu listed "
                    "before it (it would never be released)", m, (unsigned long long)count, (unsigned long long)d->done[on]);
      return 1;
    }
    default: return 1;
  }
}

static int read_file(const char *path, unsigned char **data, size_t *size, char *error) {
  FILE *f = fopen(path, "rb");
  if (!f) { snprintf(error, 512, "%s: cannot be read", path); return 0; }
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n < 0 || n > MAX_FILE || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    snprintf(error, 512, "%s: over 2 GiB or not a regular file: not a program binary", path);
    return 0;
  }
  *data = malloc((size_t)n + 1);
  *size = *data ? fread(*data, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!*data || *size != (size_t)n) { free(*data); snprintf(error, 512, "%s: cannot be read", path); return 0; }
  return 1;
}

static int decode_header(dec_t *d, size_t size, size_t *pos, uint32_t *nins, uint32_t *nsec) {
  const unsigned char *p = d->data;
  if (size < NPU_ISA_HEADER_SIZE)
    return fail(d, size, "truncated: the header needs %d bytes, the file has %zu", NPU_ISA_HEADER_SIZE, size);
  if (memcmp(p, "NPUA", 4) != 0) return fail(d, 0, "not an NPU program binary (no NPUA magic)");
  if (u16at(p + 4) != NPU_ISA_VERSION) return fail(d, 4, "ISA version %u not supported (want %d)", u16at(p + 4), NPU_ISA_VERSION);
  if (u16at(p + 6) != NPU_ISA_HEADER_SIZE) return fail(d, 6, "header size %u, expected %d", u16at(p + 6), NPU_ISA_HEADER_SIZE);
  d->nstrings = u32at(p + 8), *nins = u32at(p + 12), *nsec = u32at(p + 16);
  uint64_t body = u32at(p + 20);
  d->end = NPU_ISA_HEADER_SIZE + (size_t)body;
  if (size < d->end) return fail(d, size, "truncated: the header says %zu bytes, the file has %zu", d->end, size);
  if (size > d->end) return fail(d, d->end, "%zu bytes after the end the header gives", size - d->end);
  if (crc32_of(p + NPU_ISA_HEADER_SIZE, body) != u32at(p + 24))
    return fail(d, 24, "corrupted: the body's CRC-32 does not match the header's");
  *pos = NPU_ISA_HEADER_SIZE;
  for (uint32_t i = 0; i < d->nstrings; ++i) {
    if (d->end - *pos < 4) return fail(d, *pos, "truncated: string %u of %u has no length", i, d->nstrings);
    uint32_t n = u32at(p + *pos);
    if (n > NPU_ISA_MAX_STRING || n > d->end - *pos - 4) return fail(d, *pos, "string %u: length %u runs past the end", i, n);
    *pos += 4 + (size_t)n;
  }
  return 1;
}

/* The sections: one compute section per described dispatch, its tiles from its `.task`s, verified. */
static int decode_sections(dec_t *d, size_t pos, uint32_t nsec, npu_exec_program_t *prog) {
  if (nsec > (d->end - pos) / NPU_ISA_SECTION_HEAD) return fail(d, 16, "%u sections cannot fit in the body", nsec);
  prog->dispatches = calloc((size_t)nsec + 1, sizeof(npu_dispatch_desc_t));
  if (!prog->dispatches) return fail(d, 16, "out of memory");
  for (uint32_t k = 0; k < nsec; ++k) {
    if (d->end - pos < NPU_ISA_SECTION_HEAD) return fail(d, pos, "truncated: section %u of %u", k, nsec);
    uint32_t kind = u32at(d->data + pos), dispatch = u32at(d->data + pos + 4), size = u32at(d->data + pos + 8);
    if (kind != NPU_ISA_SECTION_COMPUTE) return fail(d, pos, "section %u: unknown kind %u", k, kind);
    if (dispatch == NPU_ISA_NO_TAG) return fail(d, pos + 4, "section %u: no dispatch", k);
    if (size > NPU_ISA_MAX_SECTION || size > d->end - pos - NPU_ISA_SECTION_HEAD || size % 8)
      return fail(d, pos + 8, "section %u: %u bytes run past the end or are no whole words", k, size);
    if (npu_exec_find(prog, dispatch)) return fail(d, pos + 4, "section %u: dispatch #%u described twice", k, dispatch);
    npu_dispatch_desc_t *desc = &prog->dispatches[prog->ndispatches++];
    desc->dispatch = dispatch, desc->root = -1;
    pos += NPU_ISA_SECTION_HEAD;
    char why[256];
    size_t bad_at = pos;
    if (!npu_section_decode(d->data + pos, size, pos, desc, why, &bad_at))
      return fail(d, bad_at, "dispatch #%u's compute section: %s", dispatch, why);
    if (!desc->reason[0] && desc->root >= 0) {
      int n = 0;
      for (size_t t = 0; t < d->ntasks; ++t) n += d->tasks[t].dispatch == dispatch;
      desc->tile_offsets = calloc((size_t)n + 1, sizeof(*desc->tile_offsets));
      desc->tile_sizes = calloc((size_t)n + 1, sizeof(*desc->tile_sizes));
      if (!desc->tile_offsets || !desc->tile_sizes) return fail(d, pos, "out of memory");
      for (size_t t = 0; t < d->ntasks; ++t) {
        const task_t *task = &d->tasks[t];
        if (task->dispatch != dispatch) continue;
        if (desc->ntiles == 0) desc->tile_rank = task->rank;
        if (task->rank != desc->tile_rank) return fail(d, task->at, ".task: %d loops, the dispatch's first task %d", task->rank, desc->tile_rank);
        memcpy(desc->tile_offsets[desc->ntiles], task->off, sizeof(task->off));
        memcpy(desc->tile_sizes[desc->ntiles++], task->size, sizeof(task->size));
      }
    }
    char where[480];
    snprintf(where, sizeof(where), "%s: offset %zu", d->path, pos);
    if (!desc->reason[0] && !npu_exec_verify(desc, where, d->error)) return 0;
    pos += size;
  }
  if (pos != d->end) return fail(d, pos, "%zu bytes after the last section", d->end - pos);
  return 1;
}

npu_exec_program_t *npu_isa_load(const char *path, char *error) {
  unsigned char *data = NULL;
  size_t size = 0, pos = 0;
  if (!read_file(path, &data, &size, error)) return NULL;
  dec_t d = {.path = path, .error = error, .data = data};
  npu_exec_program_t *prog = calloc(1, sizeof(*prog));
  uint32_t nins = 0, nsec = 0;
  int ok = prog != NULL && decode_header(&d, size, &pos, &nins, &nsec);
  if (!prog) snprintf(error, 512, "%s: out of memory", path);
  for (uint32_t i = 0; ok && i < nins; ++i) {
    ins_t in;
    size_t next = pos;
    ok = decode_record(&d, pos, &in, &next) && check_meaning(&d, &in);
    if (ok && in.op->work) d.done[in.engine]++;
    pos = next;
  }
  ok = ok && decode_sections(&d, pos, nsec, prog);
  free(d.bufs);
  free(d.tasks);
  free(data);
  if (!ok) {
    npu_exec_free(prog);
    return NULL;
  }
  return prog;
}

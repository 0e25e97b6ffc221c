/* The timing simulator's event loop (sim/timing.py `_event_loop`), step for step the same.
 *
 * Python keeps events as single integers time << shift | sequence << bits | code; here an event is
 * (time, sequence, code) compared by time then sequence (sequences are unique, so the code never
 * decides). Every array is int64, owned by the caller; the mutable ones are copies it reads back.
 * Returns 0, or 1 when empty tasks chain deeper than MAX_DEPTH (the caller runs the Python loop,
 * which gives its own error), or 2 when memory ran out.
 */
#include <stdint.h>
#include <stdlib.h>

#define MAX_DEPTH 900 /* Python's recursion limit is about 1000 frames */

typedef struct { int64_t time, seq, code; } Ev;

typedef struct {
    int64_t n_steps, seq;
    const int64_t *delay, *code;
    int64_t *wait, *start, *end, *cause;
    const int64_t *group_first, *group_next, *task_group, *dependents, *dep_first;
    int64_t *group_left, *task_waiting;
    Ev *heap;
    int64_t heap_n, heap_cap;
    int depth, failed;
} Sim;

static int before(const Ev *a, const Ev *b) {
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void push(Sim *s, int64_t time, int64_t code) {
    if (s->heap_n == s->heap_cap) {
        int64_t cap = s->heap_cap ? 2 * s->heap_cap : 1024;
        Ev *grown = realloc(s->heap, (size_t)cap * sizeof(Ev));
        if (!grown) { s->failed = 2; return; }
        s->heap = grown;
        s->heap_cap = cap;
    }
    Ev e = {time, ++s->seq, code};
    int64_t i = s->heap_n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!before(&e, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

static Ev pop(Sim *s) {
    Ev top = s->heap[0], last = s->heap[--s->heap_n];
    int64_t i = 0, n = s->heap_n;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&s->heap[c + 1], &s->heap[c])) c++;
        if (!before(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = last;
    return top;
}

/* step y loses one wait; at none it starts now, released by step c */
static void release(Sim *s, int64_t y, int64_t c, int64_t now) {
    if (--s->wait[y] == 0) {
        s->start[y] = now;
        s->cause[y] = c;
        push(s, now + s->delay[y], s->code[y]);
    }
}

static void begin_group(Sim *s, int64_t g, int64_t c, int64_t now) {
    for (int64_t y = s->group_first[g]; y < s->group_first[g + 1]; y++) release(s, y, c, now);
}

static void task_done(Sim *s, int64_t t, int64_t c, int64_t now);

static void task_ready(Sim *s, int64_t t, int64_t c, int64_t now) {
    int64_t g = s->task_group[t];
    if (g >= 0) begin_group(s, g, c, now);
    else task_done(s, t, c, now); /* a task without steps is done at once */
}

static void task_done(Sim *s, int64_t t, int64_t c, int64_t now) {
    if (++s->depth > MAX_DEPTH) { s->failed = 1; s->depth--; return; }
    for (int64_t k = s->dep_first[t]; k < s->dep_first[t + 1] && !s->failed; k++) {
        int64_t u = s->dependents[k];
        if (--s->task_waiting[u] == 0) task_ready(s, u, c, now);
    }
    s->depth--;
}

int npu_sim_event_loop(
    int64_t n_steps, int64_t n_dma, int64_t scale, int64_t bw,
    const int64_t *delay, const int64_t *code, const int64_t *step_work,
    int64_t *wait, int64_t *start, int64_t *end, int64_t *cause,
    const int64_t *next_on_engine, const int64_t *group_of_step,
    const int64_t *group_first, int64_t *group_left, const int64_t *group_next,
    const int64_t *task_group, int64_t *task_waiting, const int64_t *dependents, const int64_t *dep_first,
    const int64_t *ready, int64_t n_ready,
    const int64_t *sb_first, const int64_t *sb_flat,      /* each step's buffers */
    int64_t *buf_left, int64_t *buf_waiting,
    const int64_t *succ_first, const int64_t *succ_flat,  /* buffers reusing a buffer's addresses */
    const int64_t *bs_first, const int64_t *bs_flat,      /* each buffer's steps */
    int64_t *alloc, int64_t *free_at)
{
    Sim s = {0};
    s.n_steps = n_steps;
    s.delay = delay; s.code = code; s.wait = wait; s.start = start; s.end = end; s.cause = cause;
    s.group_first = group_first; s.group_next = group_next; s.task_group = task_group;
    s.dependents = dependents; s.dep_first = dep_first; s.group_left = group_left;
    s.task_waiting = task_waiting;
    for (int64_t i = 0; i < n_ready && !s.failed; i++) task_ready(&s, ready[i], -1, 0);

    /* the DMA pool: transfers moving bytes, in the order they joined, with their levels */
    int64_t pool_step[64], pool_level[64], pool_n = 0;
    int64_t shares[65];
    shares[0] = 0;
    for (int64_t k = 1; k <= n_dma && k <= 64; k++) shares[k] = bw / k;
    int64_t drained = 0, pool_time = 0, share = 0, low = INT64_MAX;
    int has_pending = 0;
    Ev pending = {0, 0, 0};
    int64_t done[64], n_done;
    while (!s.failed) {
        int64_t now, pooled;
        if (has_pending && (s.heap_n == 0 || before(&pending, &s.heap[0]))) {
            now = pending.time;
            has_pending = 0;
            drained += (now - pool_time) * share;
            pool_time = now;
            n_done = 0;
            int64_t kept = 0;
            for (int64_t i = 0; i < pool_n; i++) {
                if (pool_level[i] <= drained) done[n_done++] = pool_step[i];
                else { pool_step[kept] = pool_step[i]; pool_level[kept] = pool_level[i]; kept++; }
            }
            pool_n = kept;
            pooled = 1;
        } else {
            if (s.heap_n == 0) break; /* every event is done */
            Ev e = pop(&s);
            int64_t x = e.code;
            now = e.time;
            if (x >= n_steps) {
                x -= n_steps;
                int64_t work = step_work[x];
                if (work) { /* setup over: the transfer starts moving bytes */
                    if (pool_n == 64) { s.failed = 1; break; }
                    drained += (now - pool_time) * share;
                    pool_time = now;
                    int64_t level = drained + work * scale;
                    pool_step[pool_n] = x; pool_level[pool_n] = level; pool_n++;
                    if (level < low) low = level;
                    share = shares[pool_n];
                    int64_t gap = low - drained, wait_cycles = gap > 0 ? (gap + share - 1) / share : 0;
                    pending.time = now + wait_cycles;
                    pending.seq = ++s.seq;
                    has_pending = 1;
                    continue;
                }
            }
            done[0] = x;
            n_done = 1;
            pooled = 0;
        }
        for (int64_t d = 0; d < n_done && !s.failed; d++) { /* step x ends */
            int64_t x = done[d];
            end[x] = now;
            for (int64_t k = sb_first[x]; k < sb_first[x + 1]; k++) {
                int64_t b = sb_flat[k];
                if (--buf_left[b] == 0) {
                    free_at[b] = now;
                    for (int64_t j = succ_first[b]; j < succ_first[b + 1]; j++) {
                        int64_t nb = succ_flat[j];
                        if (--buf_waiting[nb] == 0) {
                            alloc[nb] = now;
                            for (int64_t i = bs_first[nb]; i < bs_first[nb + 1]; i++) release(&s, bs_flat[i], x, now);
                        }
                    }
                }
            }
            int64_t g = group_of_step[x];
            if (--group_left[g] == 0) {
                g = group_next[g];
                if (g < 0) { /* the task is done: its dependents may be ready */
                    int64_t t = ~g;
                    for (int64_t k = dep_first[t]; k < dep_first[t + 1] && !s.failed; k++) {
                        int64_t u = dependents[k];
                        if (--task_waiting[u] == 0) task_ready(&s, u, x, now);
                    }
                } else {
                    begin_group(&s, g, x, now);
                }
            }
            int64_t y = next_on_engine[x]; /* the engine is free for its next step */
            if (y >= 0) release(&s, y, x, now);
        }
        if (pooled) { /* the pool changed: when does its first transfer complete now? */
            if (pool_n) {
                share = shares[pool_n];
                low = pool_level[0];
                for (int64_t i = 1; i < pool_n; i++) if (pool_level[i] < low) low = pool_level[i];
                int64_t gap = low - drained, wait_cycles = gap > 0 ? (gap + share - 1) / share : 0;
                pending.time = now + wait_cycles;
                pending.seq = ++s.seq;
                has_pending = 1;
            } else {
                share = 0;
                low = INT64_MAX;
            }
        }
    }
    free(s.heap);
    return s.failed;
}

/* The chain of causes from step s back to a step nothing released (stats.critical_path): out[0] = s,
 * out[k + 1] = cause[out[k]]; at most n steps. Returns the length. */
int64_t npu_sim_cause_chain(const int64_t *cause, int64_t n, int64_t s, int64_t *out) {
    int64_t k = 0;
    while (s >= 0 && s < n && k < n) {
        out[k++] = s;
        s = cause[s];
    }
    return k;
}

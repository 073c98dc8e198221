/*
 * A QEMU TCG plugin for bench/router: counts every guest instruction executed (whole
 * system: kernel, user space, TLB-refill handlers; an idle CPU executes none, as `wait`
 * halts it) and the events a real MIPS 24K core spends cycles on beyond one per
 * instruction, and rewrites the running totals into a file every 20 ms, so the benchmark
 * can read them before and after each measurement:
 *
 *   qemu-system-mipsel ... -plugin ./cpu-model.so,out=FILE[,icache=64:4:32][,dcache=32:4:32]
 *
 * FILE holds one line: the instruction count, then NAME=COUNT for each event:
 *   stall        pipeline interlock cycles inside each translated block, from a static
 *                schedule by the 24K's latencies (load-use, address generation, mul, mfhi/mflo,
 *                div; see cpu-model.ini); dependencies across blocks are not seen
 *   imiss        L1 I-cache line misses
 *   imiss_pf     the same with sequential-line prefetch on a miss (a model variant)
 *   dload dstore D-cache misses by a load / by a store (write-allocate, as Linux maps KSEG0
 *                and user pages: cacheable, non-coherent, write-back)
 *   wback        dirty lines evicted (written back)
 *   uload ustore uncached accesses to RAM (KSEG1)
 *   ioload iostore accesses to devices (MMIO and port I/O, always uncached)
 *   refill       TLB refill exceptions; exc: other exceptions (syscalls, TLB invalid and
 *                modified, interrupts, emulated instructions)
 *   loads stores all data accesses
 * The caches are virtually indexed and physically tagged, LRU, geometry KIB:WAYS:LINE.
 * What each event costs is not decided here: report.py weighs the counts with the
 * penalties of cpu-model.ini, so they can be calibrated without running again.
 *
 * With prof=FILE it also counts per translated block (its start address and length), and
 * whenever FILE.req appears writes "address instructions executions imiss dmiss uncached
 * stall" lines for every block to FILE (then removes FILE.req): two dumps around a
 * measurement give a whole-system profile of instructions and of the events.
 *
 * Only the handful of plugin-API entry points used here are declared below: QEMU 7.2
 * (Debian 12) exports them from its binary, and no Debian package ships the header.
 * With one vCPU there is one writer of every counter.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;
typedef struct qemu_info_t qemu_info_t;
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*exec_cb)(unsigned int vcpu, void *udata);
typedef void (*mem_cb)(unsigned int vcpu, uint32_t info, uint64_t vaddr, void *udata);
/* enum qemu_plugin_op: QEMU_PLUGIN_INLINE_ADD_U64 is its first (0) value. */
enum { INLINE_ADD_U64 = 0 };
/* enum qemu_plugin_cb_flags: QEMU_PLUGIN_CB_NO_REGS is 0. */
enum { NO_REGS = 0 };

extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op,
                                                     void *ptr, uint64_t imm);
extern void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, exec_cb cb,
                                                 int flags, void *udata);
extern struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
                                                        size_t idx);
extern const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
extern size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
extern uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
extern void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *insn);
/* rw 3 (QEMU_PLUGIN_MEM_RW): with 1 QEMU 7.2 reports no loads. */
extern void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, mem_cb cb,
                                             int flags, int rw, void *udata);
extern struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(uint32_t info, uint64_t vaddr);
extern bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
extern uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);
extern bool qemu_plugin_mem_is_store(uint32_t info);

/* Plugin API version 1: QEMU 5.2 to 8.1. */
__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* ---- counters ----------------------------------------------------------------------- */
enum {
    E_STALL, E_IMISS, E_DLOAD, E_DSTORE, E_WBACK, E_ULOAD, E_USTORE, E_IOLOAD, E_IOSTORE,
    E_REFILL, E_EXC, E_LOADS, E_STORES, E_IMISS_PF, E_N
};
static const char *const event_names[E_N] = {
    "stall", "imiss", "dload", "dstore", "wback", "uload", "ustore", "ioload", "iostore",
    "refill", "exc", "loads", "stores", "imiss_pf",
};
static volatile uint64_t insns;
static volatile uint64_t events[E_N];
static char out_path[4096];
static char tmp_path[4100];

/* ---- caches ------------------------------------------------------------------------- */
struct cache {
    unsigned sets, ways, line_shift;
    uint64_t *tag; /* [set * ways + way], most recently used first; 0 = empty, else tag + 1 */
    uint8_t *dirty;
};
/* icache_pf: the same I-cache with sequential-line prefetch on a miss (the next line of the
 * same page is fetched too, free), for the model variant that credits such a prefetcher;
 * its misses are imiss_pf. */
static struct cache icache, icache_pf, dcache;

static int cache_init(struct cache *c, const char *spec)
{
    unsigned kib, ways, line;
    if (sscanf(spec, "%u:%u:%u", &kib, &ways, &line) != 3 || !kib || !ways || !line ||
        (line & (line - 1)))
        return -1;
    c->line_shift = (unsigned)__builtin_ctz(line);
    c->ways = ways;
    c->sets = kib * 1024 / ways / line;
    if (!c->sets || (c->sets & (c->sets - 1)))
        return -1;
    c->tag = calloc((size_t)c->sets * ways, sizeof *c->tag);
    c->dirty = calloc((size_t)c->sets * ways, 1);
    return c->tag && c->dirty ? 0 : -1;
}

/* One access: the set from the virtual address, the tag from the physical one. Returns 1
 * on a miss; *wb is set when the line it replaced was dirty. */
static int cache_access(struct cache *c, uint64_t vaddr, uint64_t paddr, int store, int *wb)
{
    unsigned set = (unsigned)(vaddr >> c->line_shift) & (c->sets - 1);
    uint64_t t = (paddr >> c->line_shift) + 1;
    uint64_t *tags = &c->tag[(size_t)set * c->ways];
    uint8_t *dirty = &c->dirty[(size_t)set * c->ways];
    unsigned w;
    for (w = 0; w < c->ways && tags[w] != t; w++)
        ;
    int miss = w == c->ways;
    uint8_t d = 0;
    if (miss) {
        w = c->ways - 1;
        *wb = tags[w] && dirty[w];
    } else {
        d = dirty[w];
    }
    for (; w > 0; w--) {
        tags[w] = tags[w - 1];
        dirty[w] = dirty[w - 1];
    }
    tags[0] = t;
    dirty[0] = (uint8_t)(d | (store != 0));
    return miss;
}

/* ---- per-block profile (prof=) ------------------------------------------------------- */
/* Allocated in chunks that never move (inline code holds their addresses); a block
 * translated again gets a second entry, summed when dumped. */
struct block {
    uint64_t vaddr;
    uint64_t n_insns;
    volatile uint64_t execs;
    volatile uint64_t imiss, dmiss, uncached;
    uint64_t stall;
};
#define CHUNK 65536
static struct block *chunks[4096];
static volatile size_t n_blocks;
static char prof_path[4096];
static char req_path[4100];

static struct block *new_block(void)
{
    size_t i = n_blocks;
    if (i / CHUNK >= sizeof chunks / sizeof chunks[0])
        return NULL;
    if (!chunks[i / CHUNK]) {
        chunks[i / CHUNK] = calloc(CHUNK, sizeof(struct block));
        if (!chunks[i / CHUNK])
            return NULL;
    }
    return &chunks[i / CHUNK][i % CHUNK];
}

/* ---- TLB refills and exceptions --------------------------------------------------------- */
/* Linux copies its TLB-refill handler (a block ending in tlbwr) to EBase, a page it picks at
 * boot; the general exception vector is EBase + 0x180 and, with vectored interrupts off
 * (Malta), interrupts enter there too. Blocks starting at those addresses are counted. */
#define TLBWR 0x42000006u
static volatile uint64_t ebase = 1; /* 1: not seen yet */

/* With prof=: TLB refills by the virtual page pair they filled. The refill handler loads
 * the pgd entry, then the even and odd PTEs; the pgd entry's offset in its page gives the
 * address's bits 31-22 and the PTE pair's offset bits 21-13, whichever process's tables they
 * are. Counted per pair (VPN2), dumped to FILE.tlb with the profile. */
static volatile uint64_t refills_by_vpn2[1 << 19];
static uint64_t pgd_entry;
static int loads_seen;

static void refill_load(unsigned int vcpu, uint32_t info, uint64_t vaddr, void *udata)
{
    (void)vcpu;
    (void)info;
    int k = (int)(uintptr_t)udata;
    if (k == 0)
        loads_seen = 0;
    loads_seen++;
    if (loads_seen == 2)
        pgd_entry = vaddr;
    else if (loads_seen == 3)
        refills_by_vpn2[((pgd_entry & 0xffc) << 7) | ((vaddr & 0xff8) >> 3)]++;
}

/* ---- the static pipeline schedule ----------------------------------------------------- */
/* Producer kinds and their latencies to an ordinary use and to a use as an address base
 * (GCC's 24k.md, from the 24K Software User's Manual): ALU 1/2, load 2/3, mul and
 * mfhi/mflo 5/6, mfc0 3/4; mult/madd reach HI/LO in 1, div in 36 (and hold the MDU). */
enum { P_ALU, P_LOAD, P_MUL, P_COP };
static const int lat_use[] = {1, 2, 5, 3};
static const int lat_addr[] = {2, 3, 6, 4};
#define HILO 32

struct deps {
    int src[3], n_src; /* registers read; 0 = none */
    int addr;          /* register read as an address base, 0 = none */
    int dst;           /* register written, 0 = none (HILO = 32) */
    int kind;          /* producer kind of dst */
    int hilo_lat;      /* for dst HILO: cycles to HI/LO */
    int mdu_busy;      /* cycles the MDU stays busy (div) */
    int mdu;           /* uses the MDU */
};

static void decode(uint32_t w, struct deps *d)
{
    unsigned op = w >> 26, rs = (w >> 21) & 31, rt = (w >> 16) & 31, rd = (w >> 11) & 31;
    unsigned fn = w & 63;
    memset(d, 0, sizeof *d);
#define SRC(r) (d->src[d->n_src++] = (int)(r))
    switch (op) {
    case 0x00:
        if (fn <= 0x03) { /* sll srl sra (and rotr) */
            SRC(rt);
            d->dst = (int)rd;
        } else if (fn <= 0x07) {
            SRC(rt);
            SRC(rs);
            d->dst = (int)rd;
        } else if (fn == 0x08) {
            SRC(rs);
        } else if (fn == 0x09) {
            SRC(rs);
            d->dst = (int)rd;
        } else if (fn == 0x0a || fn == 0x0b) {
            SRC(rs);
            SRC(rt);
            SRC(rd);
            d->dst = (int)rd;
        } else if (fn == 0x10 || fn == 0x12) {
            SRC(HILO);
            d->dst = (int)rd;
            d->kind = P_MUL;
        } else if (fn == 0x11 || fn == 0x13) {
            SRC(rs);
            d->dst = HILO;
            d->hilo_lat = 1;
        } else if (fn == 0x18 || fn == 0x19) {
            SRC(rs);
            SRC(rt);
            d->dst = HILO;
            d->hilo_lat = 1;
            d->mdu = 1;
        } else if (fn == 0x1a || fn == 0x1b) {
            SRC(rs);
            SRC(rt);
            d->dst = HILO;
            d->hilo_lat = 36;
            d->mdu = 1;
            d->mdu_busy = 36;
        } else if (fn >= 0x20 && fn <= 0x2b) {
            SRC(rs);
            SRC(rt);
            d->dst = (int)rd;
        } else if (fn >= 0x30 && fn <= 0x36) {
            SRC(rs);
            SRC(rt);
        }
        break;
    case 0x01:
        SRC(rs);
        if (rt >= 0x10 && rt <= 0x13)
            d->dst = 31;
        break;
    case 0x03:
        d->dst = 31;
        break;
    case 0x04: case 0x05: case 0x14: case 0x15:
        SRC(rs);
        SRC(rt);
        break;
    case 0x06: case 0x07: case 0x16: case 0x17:
        SRC(rs);
        break;
    case 0x08: case 0x09: case 0x0a: case 0x0b: case 0x0c: case 0x0d: case 0x0e:
        SRC(rs);
        d->dst = (int)rt;
        break;
    case 0x0f:
        d->dst = (int)rt;
        break;
    case 0x10:
        if (rs == 0) { /* mfc0 */
            d->dst = (int)rt;
            d->kind = P_COP;
        } else if (rs == 4) {
            SRC(rt);
        }
        break;
    case 0x1c:
        if (fn == 0x00 || fn == 0x01 || fn == 0x04 || fn == 0x05) {
            SRC(rs);
            SRC(rt);
            SRC(HILO);
            d->dst = HILO;
            d->hilo_lat = 1;
            d->mdu = 1;
        } else if (fn == 0x02) {
            SRC(rs);
            SRC(rt);
            d->dst = (int)rd;
            d->kind = P_MUL;
            d->mdu = 1;
        } else if (fn == 0x20 || fn == 0x21) {
            SRC(rs);
            d->dst = (int)rd;
        }
        break;
    case 0x1f:
        if (fn == 0x00) {
            SRC(rs);
            d->dst = (int)rt;
        } else if (fn == 0x04) {
            SRC(rs);
            SRC(rt);
            d->dst = (int)rt;
        } else if (fn == 0x20) {
            SRC(rt);
            d->dst = (int)rd;
        }
        break;
    case 0x20: case 0x21: case 0x23: case 0x24: case 0x25: case 0x30:
        d->addr = (int)rs;
        d->dst = (int)rt;
        d->kind = P_LOAD;
        break;
    case 0x22: case 0x26: /* lwl lwr merge into rt */
        d->addr = (int)rs;
        SRC(rt);
        d->dst = (int)rt;
        d->kind = P_LOAD;
        break;
    case 0x28: case 0x29: case 0x2a: case 0x2b: case 0x2e:
        d->addr = (int)rs;
        SRC(rt);
        break;
    case 0x38: /* sc */
        d->addr = (int)rs;
        SRC(rt);
        d->dst = (int)rt;
        d->kind = P_LOAD;
        break;
    case 0x2f: case 0x33: case 0x31: case 0x35: case 0x39: case 0x3d:
        d->addr = (int)rs;
        break;
    default:
        break;
    }
#undef SRC
    if (d->dst == 0)
        d->kind = P_ALU;
}

/* Interlock cycles of a block run start to end on an in-order single-issue pipeline. */
static uint64_t block_stalls(struct qemu_plugin_tb *tb, size_t n)
{
    long ready[33], kind_of[33], t = -1, mdu_free = 0;
    for (int r = 0; r < 33; r++) {
        ready[r] = -100;
        kind_of[r] = P_ALU;
    }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        uint32_t w = 0;
        if (qemu_plugin_insn_size(in) == 4)
            memcpy(&w, qemu_plugin_insn_data(in), 4);
        struct deps d;
        decode(w, &d);
        long issue = t + 1;
        for (int k = 0; k < d.n_src; k++) {
            int r = d.src[k];
            if (r == 0)
                continue;
            long at = r == HILO ? ready[r] : ready[r] + lat_use[kind_of[r]];
            if (at > issue)
                issue = at;
        }
        if (d.addr) {
            long at = ready[d.addr] + lat_addr[kind_of[d.addr]];
            if (at > issue)
                issue = at;
        }
        if (d.mdu && mdu_free > issue)
            issue = mdu_free;
        if (d.mdu_busy)
            mdu_free = issue + d.mdu_busy;
        if (d.dst == HILO) {
            ready[HILO] = issue + d.hilo_lat;
        } else if (d.dst) {
            ready[d.dst] = issue;
            kind_of[d.dst] = d.kind;
        }
        t = issue;
    }
    long cycles = t + 1;
    return cycles > (long)n ? (uint64_t)(cycles - (long)n) : 0;
}

/* ---- execution callbacks ---------------------------------------------------------------- */
/* What a block's execution fetches: its code lines (virtual for the set, host address of the
 * guest's RAM for the tag: one per physical line). */
struct fetch {
    uint64_t vaddr;
    struct block *b;
    unsigned n_lines;
    uint64_t line_v[];
};
/* Followed by the lines' host addresses. */
#define LINE_H(f) ((f)->line_v + (f)->n_lines)

static void block_exec(unsigned int vcpu, void *udata)
{
    (void)vcpu;
    struct fetch *f = udata;
    uint64_t eb = ebase;
    if (f->vaddr == eb)
        events[E_REFILL]++;
    else if (f->vaddr == eb + 0x180)
        events[E_EXC]++;
    unsigned miss = 0;
    int wb;
    uint64_t line = (uint64_t)1 << icache.line_shift;
    for (unsigned i = 0; i < f->n_lines; i++) {
        uint64_t v = f->line_v[i], p = LINE_H(f)[i];
        miss += (unsigned)cache_access(&icache, v, p, 0, &wb);
        if (cache_access(&icache_pf, v, p, 0, &wb)) {
            events[E_IMISS_PF]++;
            if (((v + line) & 0xfff) != 0)
                cache_access(&icache_pf, v + line, p + line, 0, &wb);
        }
    }
    events[E_IMISS] += miss;
    if (f->b)
        f->b->imiss += miss;
}

static void mem_access(unsigned int vcpu, uint32_t info, uint64_t vaddr, void *udata)
{
    (void)vcpu;
    struct block *b = udata;
    int store = qemu_plugin_mem_is_store(info);
    struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
    vaddr &= 0xffffffffu;
    events[store ? E_STORES : E_LOADS]++;
    if (hw && qemu_plugin_hwaddr_is_io(hw)) {
        events[store ? E_IOSTORE : E_IOLOAD]++;
        if (b)
            b->uncached++;
        return;
    }
    if ((vaddr & 0xe0000000u) == 0xa0000000u) { /* KSEG1: uncached */
        events[store ? E_USTORE : E_ULOAD]++;
        if (b)
            b->uncached++;
        return;
    }
    uint64_t pa = hw ? qemu_plugin_hwaddr_phys_addr(hw) : vaddr;
    int wb = 0;
    if (cache_access(&dcache, vaddr, pa, store, &wb)) {
        events[store ? E_DSTORE : E_DLOAD]++;
        if (b)
            b->dmiss++;
    }
    events[E_WBACK] += (uint64_t)wb;
}

/* True if the block holds tlbwr: then it is the refill handler (its start is EBase) and, with
 * prof=, each of its loads is watched (at most a few). */
static void watch_refill(struct qemu_plugin_tb *tb, size_t n)
{
    int has = 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        uint32_t w;
        if (qemu_plugin_insn_size(in) == 4) {
            memcpy(&w, qemu_plugin_insn_data(in), 4);
            has |= w == TLBWR;
        }
    }
    if (!has)
        return;
    uint64_t v = qemu_plugin_tb_vaddr(tb);
    if (ebase == 1 && (v & 0xfff) == 0) {
        ebase = v;
        fprintf(stderr, "cpu-model: EBase %llx (the TLB-refill handler's block)\n",
                (unsigned long long)v);
    }
    if (!prof_path[0])
        return;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        uint32_t w;
        memcpy(&w, qemu_plugin_insn_data(in), 4);
        if ((w >> 26) == 0x23) /* lw */
            qemu_plugin_register_vcpu_mem_cb(in, refill_load, NO_REGS, 3, (void *)(uintptr_t)k++);
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, (void *)&insns, n);
    uint64_t stall = block_stalls(tb, n);
    if (stall)
        qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, (void *)&events[E_STALL],
                                                 stall);
    struct block *b = NULL;
    if (prof_path[0] && (b = new_block())) {
        b->vaddr = qemu_plugin_tb_vaddr(tb);
        b->n_insns = n;
        b->stall = stall;
        __atomic_store_n(&n_blocks, n_blocks + 1, __ATOMIC_RELEASE);
        qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, (void *)&b->execs, 1);
    }
    watch_refill(tb, n);

    /* The code lines this block covers, in order, each once. */
    struct fetch *f = malloc(sizeof *f + 2 * (n + 1) * sizeof(uint64_t));
    if (!f)
        return;
    f->vaddr = qemu_plugin_tb_vaddr(tb);
    f->b = b;
    f->n_lines = 0;
    uint64_t *lv = f->line_v, lh[n + 1];
    uint64_t mask = ~(((uint64_t)1 << icache.line_shift) - 1);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        uint64_t v = qemu_plugin_insn_vaddr(in) & mask;
        uint64_t h = (uint64_t)(uintptr_t)qemu_plugin_insn_haddr(in) & mask;
        if (f->n_lines && lv[f->n_lines - 1] == v)
            continue;
        lv[f->n_lines] = v;
        lh[f->n_lines] = h;
        f->n_lines++;
    }
    memcpy(LINE_H(f), lh, f->n_lines * sizeof(uint64_t));
    /* Kept for as long as QEMU may run the block: never freed (a few MiB per run). */
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, NO_REGS, f);
    for (size_t i = 0; i < n; i++)
        qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), mem_access, NO_REGS, 3, b);
}

/* ---- output ------------------------------------------------------------------------------- */
static void dump_profile(void)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", prof_path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    size_t n = __atomic_load_n(&n_blocks, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < n; i++) {
        struct block *b = &chunks[i / CHUNK][i % CHUNK];
        if (b->execs)
            fprintf(f, "%llx %llu %llu %llu %llu %llu %llu\n", (unsigned long long)b->vaddr,
                    (unsigned long long)(b->execs * b->n_insns), (unsigned long long)b->execs,
                    (unsigned long long)b->imiss, (unsigned long long)b->dmiss,
                    (unsigned long long)b->uncached, (unsigned long long)(b->execs * b->stall));
    }
    if (fclose(f) != 0)
        return;
    char tlb[4200], tlb_tmp[4210];
    snprintf(tlb, sizeof tlb, "%s.tlb", prof_path);
    snprintf(tlb_tmp, sizeof tlb_tmp, "%s.tmp", tlb);
    FILE *t = fopen(tlb_tmp, "w");
    if (t) {
        for (size_t i = 0; i < sizeof refills_by_vpn2 / sizeof refills_by_vpn2[0]; i++)
            if (refills_by_vpn2[i])
                fprintf(t, "%08llx %llu\n", (unsigned long long)i << 13,
                        (unsigned long long)refills_by_vpn2[i]);
        if (fclose(t) == 0)
            rename(tlb_tmp, tlb);
    }
    rename(tmp, prof_path);
}

/* Write-then-rename, so a reader never sees a half-written line. */
static void *writer(void *arg)
{
    (void)arg;
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (;;) {
        FILE *f = fopen(tmp_path, "w");
        if (f) {
            fprintf(f, "%llu", (unsigned long long)insns);
            for (int e = 0; e < E_N; e++)
                fprintf(f, " %s=%llu", event_names[e], (unsigned long long)events[e]);
            fprintf(f, "\n");
            if (fclose(f) == 0)
                rename(tmp_path, out_path);
        }
        if (prof_path[0] && access(req_path, F_OK) == 0) {
            dump_profile();
            unlink(req_path);
        }
        nanosleep(&pause, NULL);
    }
    return NULL;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const qemu_info_t *info,
                                                               int argc, char **argv)
{
    (void)info;
    const char *ispec = "64:4:32", *dspec = "32:4:32";
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0)
            snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
        else if (strncmp(argv[i], "prof=", 5) == 0)
            snprintf(prof_path, sizeof prof_path, "%s", argv[i] + 5);
        else if (strncmp(argv[i], "icache=", 7) == 0)
            ispec = argv[i] + 7;
        else if (strncmp(argv[i], "dcache=", 7) == 0)
            dspec = argv[i] + 7;
        else {
            fprintf(stderr, "cpu-model: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (!out_path[0]) {
        fprintf(stderr, "cpu-model: give out=FILE\n");
        return -1;
    }
    if (cache_init(&icache, ispec) || cache_init(&icache_pf, ispec) || cache_init(&dcache, dspec)) {
        fprintf(stderr, "cpu-model: a cache is KIB:WAYS:LINE, powers of two (%s, %s)\n", ispec,
                dspec);
        return -1;
    }
    fprintf(stderr, "cpu-model: I-cache %s, D-cache %s (KiB:ways:line)\n", ispec, dspec);
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", out_path);
    snprintf(req_path, sizeof req_path, "%s.req", prof_path);
    pthread_t t;
    if (pthread_create(&t, NULL, writer, NULL) != 0)
        return -1;
    pthread_detach(t);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    return 0;
}

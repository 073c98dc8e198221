/*
 * A QEMU TCG plugin for bench/router: counts every guest instruction executed (whole
 * system: kernel, user space, TLB-refill handlers; an idle CPU executes none, as `wait`
 * halts it) and rewrites the running total into a file every 20 ms, so the benchmark can
 * read it before and after each measurement.
 *
 *   qemu-system-mipsel ... -plugin ./insn-count.so,out=/path/to/count
 *
 * With prof=FILE it also counts per translated block (its start address and length), and
 * whenever FILE.req appears writes "address instructions executions" lines for every block to FILE
 * (then removes FILE.req): two dumps around a measurement give a whole-system profile.
 *
 * Only the handful of plugin-API entry points used here are declared below: QEMU 7.2
 * (Debian 12) exports them from its binary, and no Debian package ships the header.
 * The count is bumped by inline code in each translated block (no callback per block);
 * with one vCPU there is one writer.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
/* enum qemu_plugin_op: QEMU_PLUGIN_INLINE_ADD_U64 is its first (0) value. */
enum { INLINE_ADD_U64 = 0 };

extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op,
                                                     void *ptr, uint64_t imm);
struct qemu_plugin_insn;
extern struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
                                                        size_t idx);
extern const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
extern size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
typedef void (*mem_cb)(unsigned int vcpu, uint32_t info, uint64_t vaddr, void *udata);
/* flags 0: no registers; rw 3 (QEMU_PLUGIN_MEM_RW): with 1 QEMU 7.2 reports no loads. */
extern void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, mem_cb cb,
                                             int flags, int rw, void *udata);

/* Plugin API version 1: QEMU 5.2 to 8.1. */
__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static volatile uint64_t insns;
static char out_path[4096];
static char tmp_path[4100];

/* Per-block counters for prof=: allocated in chunks that never move (inline code holds
 * their addresses); a block translated again gets a second entry, summed when dumped. */
struct block {
    uint64_t vaddr;
    uint64_t n_insns;
    volatile uint64_t execs;
};
#define CHUNK 65536
static struct block *chunks[4096];
static volatile size_t n_blocks;
static char prof_path[4096];
static char req_path[4100];

/* With prof=: TLB refills by the virtual page pair they filled. Linux's MIPS32 refill
 * handler (a block ending in tlbwr) loads the pgd entry, then the even and odd PTEs; the
 * pgd entry's offset in its page gives the address's bits 31-22 and the PTE pair's offset
 * bits 21-13, whichever process's tables they are. Counted per pair (VPN2), dumped to
 * FILE.tlb with the profile. */
#define TLBWR 0x42000006u
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

/* True if the block holds tlbwr: then each of its loads is watched (at most a few). */
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
    static int shown;
    if (!shown++) { /* once, into QEMU's log: the handler's words, to check the loads */
        fprintf(stderr, "insn-count: tlbwr block at %llx:", (unsigned long long)qemu_plugin_tb_vaddr(tb));
        for (size_t i = 0; i < n; i++) {
            uint32_t w;
            memcpy(&w, qemu_plugin_insn_data(qemu_plugin_tb_get_insn(tb, i)), 4);
            fprintf(stderr, " %08x", w);
        }
        fprintf(stderr, "\n");
    }
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        uint32_t w;
        memcpy(&w, qemu_plugin_insn_data(in), 4);
        if ((w >> 26) == 0x23) /* lw */
            qemu_plugin_register_vcpu_mem_cb(in, refill_load, 0, 3, (void *)(uintptr_t)k++);
    }
}

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

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, (void *)&insns, n);
    if (!prof_path[0])
        return;
    struct block *b = new_block();
    if (!b)
        return;
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->n_insns = n;
    __atomic_store_n(&n_blocks, n_blocks + 1, __ATOMIC_RELEASE);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, (void *)&b->execs, 1);
    watch_refill(tb, n);
}

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
            fprintf(f, "%llx %llu %llu\n", (unsigned long long)b->vaddr,
                    (unsigned long long)(b->execs * b->n_insns), (unsigned long long)b->execs);
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

/* Write-then-rename, so a reader never sees a half-written number. */
static void *writer(void *arg)
{
    (void)arg;
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (;;) {
        FILE *f = fopen(tmp_path, "w");
        if (f) {
            fprintf(f, "%llu\n", (unsigned long long)insns);
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
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0)
            snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
        if (strncmp(argv[i], "prof=", 5) == 0)
            snprintf(prof_path, sizeof prof_path, "%s", argv[i] + 5);
    }
    if (!out_path[0]) {
        fprintf(stderr, "insn-count: give out=FILE\n");
        return -1;
    }
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", out_path);
    snprintf(req_path, sizeof req_path, "%s.req", prof_path);
    pthread_t t;
    if (pthread_create(&t, NULL, writer, NULL) != 0)
        return -1;
    pthread_detach(t);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    return 0;
}

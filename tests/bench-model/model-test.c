/*
 * Unit tests of bench/router/cpu-model.c's cache and pipeline model, without QEMU: the file is
 * included whole, and the few plugin-API calls its translation code makes are answered here
 * from a block of instruction words (QEMU is what provides them when the plugin runs).
 */
#include "../../bench/router/cpu-model.c"

struct qemu_plugin_tb {
    const uint32_t *words;
    size_t n;
};
struct qemu_plugin_insn {
    uint32_t word;
};
static struct qemu_plugin_insn insn_slots[64];

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb) { return tb->n; }
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t i)
{
    insn_slots[i].word = tb->words[i];
    return &insn_slots[i];
}
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *in) { return &in->word; }
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *in) { (void)in; return 4; }
/* Not reached by what is tested here. */
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb) { (void)id; (void)cb; }
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb) { (void)tb; return 0; }
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op, void *p, uint64_t imm)
{ (void)tb; (void)op; (void)p; (void)imm; }
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, exec_cb cb, int f, void *u)
{ (void)tb; (void)cb; (void)f; (void)u; }
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *in) { (void)in; return 0; }
void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *in) { (void)in; return NULL; }
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *in, mem_cb cb, int f, int rw, void *u)
{ (void)in; (void)cb; (void)f; (void)rw; (void)u; }
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(uint32_t info, uint64_t vaddr) { (void)info; (void)vaddr; return NULL; }
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *h) { (void)h; return false; }
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *h) { (void)h; return 0; }
bool qemu_plugin_mem_is_store(uint32_t info) { return info != 0; }

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static uint64_t stalls_of(const uint32_t *w, size_t n)
{
    struct qemu_plugin_tb tb = {w, n};
    return block_stalls(&tb, n);
}

/* Encodings (MIPS32r2): register numbers t0 8, t1 9, t2 10, a0 4. */
#define LW(rt, base) (0x8c000000u | (base) << 21 | (rt) << 16)
#define SW(rt, base) (0xac000000u | (base) << 21 | (rt) << 16)
#define ADDU(rd, rs, rt) ((rs) << 21 | (rt) << 16 | (rd) << 11 | 0x21u)
#define ADDIU(rt, rs) (0x24000000u | (rs) << 21 | (rt) << 16 | 4u)
#define MULT(rs, rt) ((rs) << 21 | (rt) << 16 | 0x18u)
#define DIVU(rs, rt) ((rs) << 21 | (rt) << 16 | 0x1bu)
#define MFLO(rd) ((rd) << 11 | 0x12u)
#define MUL(rd, rs, rt) (0x70000002u | (rs) << 21 | (rt) << 16 | (rd) << 11)
#define NOP 0u

static void test_stalls(void)
{
    uint32_t indep[] = {LW(8, 4), ADDU(9, 10, 10), ADDU(2, 8, 8)};
    CHECK(stalls_of(indep, 3) == 0, "a load used two later: no stall (got %llu)",
          (unsigned long long)stalls_of(indep, 3));
    uint32_t use[] = {LW(8, 4), ADDU(9, 8, 8)};
    CHECK(stalls_of(use, 2) == 1, "load then use: 1 (got %llu)", (unsigned long long)stalls_of(use, 2));
    uint32_t chase[] = {LW(8, 4), LW(9, 8)};
    CHECK(stalls_of(chase, 2) == 2, "load then load through it: 2 (got %llu)",
          (unsigned long long)stalls_of(chase, 2));
    uint32_t agen[] = {ADDIU(4, 4), LW(8, 4)};
    CHECK(stalls_of(agen, 2) == 1, "ALU result as a load's base: 1 (got %llu)",
          (unsigned long long)stalls_of(agen, 2));
    uint32_t store_data[] = {ADDU(8, 9, 9), SW(8, 4)};
    CHECK(stalls_of(store_data, 2) == 0, "ALU result stored as data: 0 (got %llu)",
          (unsigned long long)stalls_of(store_data, 2));
    uint32_t mflo[] = {MULT(8, 9), MFLO(10), ADDU(2, 10, 10)};
    CHECK(stalls_of(mflo, 3) == 4, "mflo's result used next: 4 (got %llu)",
          (unsigned long long)stalls_of(mflo, 3));
    uint32_t mul[] = {MUL(10, 8, 9), ADDU(2, 10, 10)};
    CHECK(stalls_of(mul, 2) == 4, "mul's result used next: 4 (got %llu)", (unsigned long long)stalls_of(mul, 2));
    uint32_t div[] = {DIVU(8, 9), MFLO(10)};
    CHECK(stalls_of(div, 2) == 35, "mflo after divu waits for the divide: 35 (got %llu)",
          (unsigned long long)stalls_of(div, 2));
    uint32_t zero[] = {LW(0, 4), ADDU(9, 0, 0)};
    CHECK(stalls_of(zero, 2) == 0, "$zero is never waited for (got %llu)", (unsigned long long)stalls_of(zero, 2));
}

static void test_cache(void)
{
    struct cache c;
    CHECK(cache_init(&c, "32:4:32") == 0, "32:4:32 is a valid geometry");
    CHECK(c.sets == 256, "32 KiB, 4-way, 32-byte lines: 256 sets (got %u)", c.sets);
    CHECK(cache_init(&c, "32:3:32") != 0 || c.sets != 0, "non-power-of-two sets refused");
    cache_init(&c, "32:4:32");
    int wb = 0;
    CHECK(cache_access(&c, 0x1000, 0x1000, 0, &wb) == 1, "first access misses");
    CHECK(cache_access(&c, 0x1004, 0x1004, 0, &wb) == 0, "same line hits");
    /* Five lines of one set (8 KiB apart): the least recently used goes. */
    for (uint64_t i = 1; i <= 4; i++)
        cache_access(&c, 0x1000 + i * 8192, 0x1000 + i * 8192, i == 1, &wb);
    CHECK(cache_access(&c, 0x1000, 0x1000, 0, &wb) == 1, "LRU line evicted by the fifth of its set");
    /* Now resident: 0x1000, and lines 4, 3, 2 (1, the dirty one, was evicted just now). */
    CHECK(wb == 1, "evicting a line written before is a write-back");
    wb = 0;
    cache_access(&c, 0x1000 + 5 * 8192, 0x1000 + 5 * 8192, 0, &wb);
    CHECK(wb == 0, "evicting a clean line is no write-back");
    /* Virtually indexed, physically tagged: two virtual aliases of one physical line in
     * different sets are two lines; one virtual address over two physical pages is two tags. */
    cache_init(&c, "32:4:32");
    cache_access(&c, 0x400000, 0x9000, 0, &wb);
    CHECK(cache_access(&c, 0x400000, 0xa000, 0, &wb) == 1, "same virtual line, other physical page: miss");
    CHECK(cache_access(&c, 0x400000, 0x9000, 0, &wb) == 0, "and the first is still there");
}

/* A block's lines as block_exec sees them: virtual and physical addresses alike. */
static void run_block(uint64_t first_line, unsigned n_lines)
{
    struct fetch *f = calloc(1, sizeof *f + 2 * n_lines * sizeof(uint64_t));
    f->vaddr = first_line;
    f->n_lines = n_lines;
    for (unsigned i = 0; i < n_lines; i++)
        f->line_v[i] = LINE_H(f)[i] = first_line + 32 * i;
    block_exec(0, f);
    free(f);
}

static void test_prefetch(void)
{
    CHECK(cache_init(&icache, "64:4:32") == 0 && cache_init(&icache_pf, "64:4:32") == 0, "init");
    events[E_IMISS] = events[E_IMISS_PF] = 0;
    /* Three lines in a row: three misses; with the next line prefetched on each miss, the
     * second comes free, so two. */
    run_block(0x10000, 3);
    CHECK(events[E_IMISS] == 3, "imiss %llu, want 3", (unsigned long long)events[E_IMISS]);
    CHECK(events[E_IMISS_PF] == 2, "imiss_pf %llu, want 2", (unsigned long long)events[E_IMISS_PF]);
    /* The line that ends a page does not prefetch the next page's first line. */
    events[E_IMISS] = events[E_IMISS_PF] = 0;
    run_block(0x20fe0, 2);
    CHECK(events[E_IMISS] == 2 && events[E_IMISS_PF] == 2, "across a page: %llu / %llu, want 2 / 2",
          (unsigned long long)events[E_IMISS], (unsigned long long)events[E_IMISS_PF]);
    /* Lines already cached cost nothing either way. */
    events[E_IMISS] = events[E_IMISS_PF] = 0;
    run_block(0x10000, 3);
    CHECK(events[E_IMISS] == 0 && events[E_IMISS_PF] == 0, "again: %llu / %llu, want 0 / 0",
          (unsigned long long)events[E_IMISS], (unsigned long long)events[E_IMISS_PF]);
}

int main(void)
{
    test_stalls();
    test_cache();
    test_prefetch();
    if (failures) {
        printf("cpu-model tests: %d failed\n", failures);
        return 1;
    }
    printf("cpu-model tests: all passed\n");
    return 0;
}

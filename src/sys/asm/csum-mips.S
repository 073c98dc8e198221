/*
 * The 64-bit sum of 32-bit words, for the Internet checksum (src/sys/offload.rs), on
 * MIPS32 (o32 ABI), big- and little-endian.
 *
 *   u64 solowg_sum_words_mips(const u32 *words, u32 n);
 *
 * Returns words[0] + ... + words[n - 1] as an exact 64-bit sum (n < 2^32). Each word is one
 * load and one maddu into HI:LO ("w * 1", the multiply unit's 64-bit accumulator): two
 * instructions a word, where the add-with-carry idiom the compiler emits (addu, sltu, addu)
 * takes four with the load.
 */

#if _MIPS_SIM != _ABIO32
#error "csum-mips.S: o32 ABI only"
#endif

#define PTR	$4	/* a0 */
#define N	$5	/* a1: word count, then the end of the 8-word part */
#define END	$6	/* a2: the end of all words */
#define ONE	$7	/* a3 */
#define W0	$8
#define W1	$9
#define W2	$10
#define W3	$11
#define W4	$12
#define W5	$13
#define W6	$14
#define W7	$15

	.text
	.set	nomips16
	.set	nomicromips
	.set	noreorder

	.globl	solowg_sum_words_mips
	.type	solowg_sum_words_mips, @function
	.ent	solowg_sum_words_mips
solowg_sum_words_mips:
	.frame	$sp, 0, $31
	mtlo	$0
	mthi	$0
	li	ONE, 1
	sll	END, N, 2
	addu	END, PTR, END		/* end of all words */
	srl	N, N, 3
	sll	N, N, 5
	beq	N, $0, .Ltail
	 addu	N, PTR, N		/* end of the whole 8-word groups */
.Leight:
	lw	W0, 0(PTR)
	lw	W1, 4(PTR)
	lw	W2, 8(PTR)
	lw	W3, 12(PTR)
	lw	W4, 16(PTR)
	lw	W5, 20(PTR)
	lw	W6, 24(PTR)
	lw	W7, 28(PTR)
	maddu	W0, ONE
	maddu	W1, ONE
	maddu	W2, ONE
	maddu	W3, ONE
	maddu	W4, ONE
	maddu	W5, ONE
	maddu	W6, ONE
	addiu	PTR, PTR, 32
	bne	PTR, N, .Leight
	 maddu	W7, ONE
.Ltail:
	beq	PTR, END, .Ldone
	 nop
.Lone:
	lw	W0, 0(PTR)
	addiu	PTR, PTR, 4
	bne	PTR, END, .Lone
	 maddu	W0, ONE
.Ldone:
	/* o32 returns a u64 in v0:v1, the most significant word first on big-endian */
#ifdef __MIPSEB__
	mfhi	$2
	jr	$31
	 mflo	$3
#else
	mflo	$2
	jr	$31
	 mfhi	$3
#endif
	.end	solowg_sum_words_mips
	.size	solowg_sum_words_mips, . - solowg_sum_words_mips

	.section .note.GNU-stack, "", @progbits

/*
 * Poly1305 block function for MIPS32r2 (o32 ABI), big- and little-endian.
 *
 *   void solowg_poly1305_blocks_mips(struct state *st, const u8 *data, size_t len, u32 hibit);
 *   struct state { u32 h[5]; u32 r[4]; };   -- src/crypto/poly1305.rs `State`, radix 2^32
 *
 * Absorbs len/16 blocks (len a multiple of 16; data of any alignment), each with hibit
 * (0 or 1) at 2^128: h = (h + m + hibit*2^128) * r, partially reduced. Same arithmetic and
 * invariant as portable::blocks in src/crypto/poly1305.rs, whose comments carry the bounds:
 * - on entry to each block the bits of h4 above 2^130 are folded into h0 as 5*(h4>>2);
 * - each product column is one multu + a maddu chain in HI/LO, its carry enters the next
 *   column as "maddu carry, 1" (one instruction; there is no shift of HI:LO);
 * - s_j = r_j + (r_j >> 2) = 5/4 r_j (exact: clamping clears r_j's two low bits, j = 1..3).
 * No branch depends on secret data: only on len and on the alignment of data.
 */

#if __mips_isa_rev < 2 && defined(__MIPSEB__)
#error "poly1305-mips.S: big-endian needs MIPS32r2 (wsbh/rotr)"
#endif
#if _MIPS_SIM != _ABIO32
#error "poly1305-mips.S: o32 ABI only"
#endif

#define CTX	$4	/* a0 */
#define INP	$5	/* a1 */
#define END	$6	/* a2: len on entry, then data + len */
#define HIBIT	$7	/* a3 */
#define N0	$22	/* h0..h2 between blocks (the multiply writes them here, so */
#define N1	$23	/* the message addition, which reads them, can write H0..H2 */
#define N2	$30	/* without any register moves) */
#define H0	$8	/* h0..h2 after the message addition: multiplier inputs */
#define H1	$9
#define H2	$10
#define H3	$11
#define H4	$12
#define R0	$13
#define R1	$14
#define R2	$15
#define R3	$24
#define S1	$16	/* s0..s7, fp are callee-saved: spilled once per call */
#define S2	$17
#define S3	$18
#define ONE	$19
#define T0	$20	/* carry between limbs, then between product columns */
#define T1	$21
#define L0	$2	/* message words */
#define L1	$3
#define L2	$25
#define L3	$1	/* at: hence .set noat */

	.text
	.set	nomips16
	.set	nomicromips
	.set	noreorder
	.set	noat

/* Load the little-endian word at off(INP) into reg. */
.macro	LOADW reg, off, aligned
.if \aligned
	lw	\reg, \off(INP)
.else
#ifdef __MIPSEB__
	lwl	\reg, \off(INP)
	lwr	\reg, \off+3(INP)
#else
	lwl	\reg, \off+3(INP)
	lwr	\reg, \off(INP)
#endif
.endif
#ifdef __MIPSEB__
	wsbh	\reg, \reg
	rotr	\reg, \reg, 16
#endif
.endm

/* d = h + m + T0 (carry in, 0..2); carry out (0..2) to T0. d and m must differ. */
.macro	ADDLIMB d, h, m
	addu	\d, \h, \m
	sltu	T1, \d, \m
	addu	\d, \d, T0
	sltu	T0, \d, T0
	addu	T0, T0, T1
.endm

/* One block at INP, advancing INP; all but the last instruction (see the loops). */
.macro	BLOCK aligned
	LOADW	L0, 0, \aligned
	LOADW	L1, 4, \aligned
	LOADW	L2, 8, \aligned
	LOADW	L3, 12, \aligned
	addiu	INP, INP, 16

	/* T0 = 5 * (h4 >> 2): the part of h at and above 2^130, reduced (2^130 = 5 mod p) */
	srl	T0, H4, 2
	sll	T1, T0, 2
	addu	T0, T0, T1
	andi	H4, H4, 3
	ADDLIMB	H0, N0, L0
	ADDLIMB	H1, N1, L1
	ADDLIMB	H2, N2, L2
	ADDLIMB	H3, H3, L3
	addu	H4, H4, T0
	addu	H4, H4, HIBIT

	/* h *= r: column k collects h_i * r_j with i + j = k, and i + j = k + 4 as h_i * s_j */
	multu	H0, R0
	maddu	H1, S3
	maddu	H2, S2
	maddu	H3, S1
	mflo	N0
	mfhi	T0

	multu	H0, R1
	maddu	H1, R0
	maddu	H2, S3
	maddu	H3, S2
	maddu	H4, S1
	maddu	T0, ONE
	mflo	N1
	mfhi	T0

	multu	H0, R2
	maddu	H1, R1
	maddu	H2, R0
	maddu	H3, S3
	maddu	H4, S2
	maddu	T0, ONE
	mflo	N2
	mfhi	T0

	multu	H0, R3
	maddu	H1, R2
	maddu	H2, R1
	maddu	H3, R0
	maddu	H4, S3
	maddu	T0, ONE
	mflo	H3
	mfhi	T0

	/* h4 * r0 < 2^31 fits mul (which clobbers HI/LO: they are dead here) */
	mul	H4, H4, R0
	/* addu H4, H4, T0 goes in the loop branch's delay slot */
.endm

	.globl	solowg_poly1305_blocks_mips
	.type	solowg_poly1305_blocks_mips, @function
	.ent	solowg_poly1305_blocks_mips
solowg_poly1305_blocks_mips:
	.frame	$sp, 40, $31
	beqz	END, .Lnothing
	 addu	END, INP, END

	addiu	$sp, $sp, -40
	sw	$16, 0($sp)
	sw	$17, 4($sp)
	sw	$18, 8($sp)
	sw	$19, 12($sp)
	sw	$20, 16($sp)
	sw	$21, 20($sp)
	sw	$22, 24($sp)
	sw	$23, 28($sp)
	sw	$30, 32($sp)

	lw	N0, 0(CTX)
	lw	N1, 4(CTX)
	lw	N2, 8(CTX)
	lw	H3, 12(CTX)
	lw	H4, 16(CTX)
	lw	R0, 20(CTX)
	lw	R1, 24(CTX)
	lw	R2, 28(CTX)
	lw	R3, 32(CTX)
	srl	S1, R1, 2
	addu	S1, S1, R1
	srl	S2, R2, 2
	addu	S2, S2, R2
	srl	S3, R3, 2
	addu	S3, S3, R3
	li	ONE, 1

	/* Two copies of the loop: plain lw when data is word-aligned, lwl/lwr otherwise. */
	andi	T0, INP, 3
	bnez	T0, .Lunaligned
	 nop
.Laligned:
	BLOCK	1
	bne	INP, END, .Laligned
	 addu	H4, H4, T0
	b	.Ldone
	 nop
.Lunaligned:
	BLOCK	0
	bne	INP, END, .Lunaligned
	 addu	H4, H4, T0

.Ldone:
	sw	N0, 0(CTX)
	sw	N1, 4(CTX)
	sw	N2, 8(CTX)
	sw	H3, 12(CTX)
	sw	H4, 16(CTX)
	lw	$16, 0($sp)
	lw	$17, 4($sp)
	lw	$18, 8($sp)
	lw	$19, 12($sp)
	lw	$20, 16($sp)
	lw	$21, 20($sp)
	lw	$22, 24($sp)
	lw	$23, 28($sp)
	lw	$30, 32($sp)
	jr	$31
	 addiu	$sp, $sp, 40

.Lnothing:
	jr	$31
	 nop
	.end	solowg_poly1305_blocks_mips
	.size	solowg_poly1305_blocks_mips, . - solowg_poly1305_blocks_mips

	.section .note.GNU-stack, "", @progbits

//! Assembles the MIPS32r2 Poly1305 block function and the checksum's word sum, and only for
//! `target_arch = "mips"`: other targets use the portable Rust and need no C toolchain for
//! the target.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/crypto/asm/poly1305-mips.S");
    println!("cargo:rerun-if-changed=src/sys/asm/csum-mips.S");
    // build.rs runs on the host: the target comes from Cargo's environment, not cfg!().
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("mips") {
        cc::Build::new()
            .file("src/crypto/asm/poly1305-mips.S")
            .file("src/sys/asm/csum-mips.S")
            .compile("solowg_mips_asm");
    }
}

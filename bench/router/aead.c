/*
 * The guest's ChaCha20-Poly1305 for the cost model's calibration (bench/router --calibrate):
 * seals COUNT packets of SIZE bytes with 16 bytes of AAD through OpenSSL's EVP interface,
 * one init/update/final per packet, as `openssl speed -aead` does and as the published
 * MT7620A figures were taken. The guest's own libcrypto (Debian's) is loaded at run time, so
 * no OpenSSL headers or libraries for MIPS are needed to build this.
 *
 *   aead COUNT SIZE        prints "sealed COUNT x SIZE"
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*new_fn)(void);
typedef const void *(*cipher_fn)(void);
typedef int (*init_fn)(void *, const void *, void *, const unsigned char *, const unsigned char *);
typedef int (*update_fn)(void *, unsigned char *, int *, const unsigned char *, int);
typedef int (*final_fn)(void *, unsigned char *, int *);
typedef int (*ctrl_fn)(void *, int, int, void *);

/* EVP_CTRL_AEAD_GET_TAG */
#define GET_TAG 0x10

int main(int argc, char **argv)
{
    if (argc != 3)
        return fprintf(stderr, "usage: aead COUNT SIZE\n"), 2;
    long count = atol(argv[1]), size = atol(argv[2]);
    if (count <= 0 || size <= 0 || size > 65536)
        return fprintf(stderr, "aead: COUNT > 0, 0 < SIZE <= 65536\n"), 2;
    void *lib = dlopen("libcrypto.so.3", RTLD_NOW);
    if (!lib)
        return fprintf(stderr, "aead: %s\n", dlerror()), 1;
    new_fn ctx_new = (new_fn)dlsym(lib, "EVP_CIPHER_CTX_new");
    cipher_fn cipher = (cipher_fn)dlsym(lib, "EVP_chacha20_poly1305");
    init_fn init = (init_fn)dlsym(lib, "EVP_EncryptInit_ex");
    update_fn update = (update_fn)dlsym(lib, "EVP_EncryptUpdate");
    final_fn final = (final_fn)dlsym(lib, "EVP_EncryptFinal_ex");
    ctrl_fn ctrl = (ctrl_fn)dlsym(lib, "EVP_CIPHER_CTX_ctrl");
    if (!ctx_new || !cipher || !init || !update || !final || !ctrl)
        return fprintf(stderr, "aead: libcrypto lacks the EVP functions\n"), 1;
    void *ctx = ctx_new();
    unsigned char key[32] = {1}, iv[12] = {2}, aad[16] = {3}, tag[16];
    unsigned char *buf = calloc(1, (size_t)size + 16);
    if (!ctx || !buf || !init(ctx, cipher(), NULL, key, iv))
        return fprintf(stderr, "aead: setup failed\n"), 1;
    for (long i = 0; i < count; i++) {
        int n;
        memcpy(iv, &i, sizeof i < sizeof iv ? sizeof i : sizeof iv);
        if (!init(ctx, NULL, NULL, NULL, iv) || !update(ctx, NULL, &n, aad, sizeof aad) ||
            !update(ctx, buf, &n, buf, (int)size) || !final(ctx, buf + n, &n) ||
            !ctrl(ctx, GET_TAG, 16, tag))
            return fprintf(stderr, "aead: seal %ld failed\n", i), 1;
    }
    printf("sealed %ld x %ld\n", count, size);
    return 0;
}

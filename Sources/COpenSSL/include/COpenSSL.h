#ifndef HERALD_COPENSSL_H
#define HERALD_COPENSSL_H

#include <stddef.h>

/// OpenSSL's libcrypto (libcrypto.so.3), opened at its first use rather than linked: a function that
/// never signs or verifies starts without loading it. Every function Herald calls is typed from
/// OpenSSL's own headers (libssl-dev), so a signature that differs fails the build, not the run.

/// Opens libcrypto once; 1 when every function Herald calls was found, else 0 (see herald_openssl_problem).
int herald_openssl_load(void);
/// Opens libcrypto on a thread of its own, so that its first use need not wait for it; calls
/// `failed` with the reason there if it cannot be used.
void herald_openssl_load_in_background(void (*_Nonnull failed)(const char *_Nonnull problem));
/// Why the library could not be used, or NULL.
const char *_Nullable herald_openssl_problem(void);

/// SHA-256 of `count` bytes into `digest` (32 bytes). 1 on success.
int herald_sha256(const void *_Nullable data, size_t count, unsigned char *_Nonnull digest);

/// An RSA private key from DER: PKCS#8 PrivateKeyInfo (`pkcs8` 1) or PKCS#1 RSAPrivateKey (0). The
/// whole input must be the key. NULL when it is not an RSA key of that form.
void *_Nullable herald_rsa_private_key(const unsigned char *_Nonnull der, size_t count, int pkcs8);
/// An RSA public key from the big-endian bytes of its modulus and exponent. NULL when refused.
void *_Nullable herald_rsa_public_key(const unsigned char *_Nonnull n, size_t nCount, const unsigned char *_Nonnull e, size_t eCount);
/// The key's modulus in bits.
int herald_rsa_bits(const void *_Nonnull key);
void herald_rsa_free(void *_Nullable key);

/// RSASSA-PKCS1-v1_5 with SHA-256 (RS256) of `count` bytes: the signature's length written into
/// `signature` (which holds `capacity` bytes), or 0.
size_t herald_rs256_sign(const void *_Nonnull key, const unsigned char *_Nullable message, size_t count,
                         unsigned char *_Nonnull signature, size_t capacity);
/// 1 when `signature` is the key's RS256 signature of the message, else 0.
int herald_rs256_verify(const void *_Nonnull key, const unsigned char *_Nonnull signature, size_t signatureCount,
                        const unsigned char *_Nullable message, size_t count);

#endif

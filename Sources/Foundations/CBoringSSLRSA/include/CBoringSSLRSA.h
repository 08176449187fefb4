#ifndef HERALD_CBORINGSSLRSA_H
#define HERALD_CBORINGSSLRSA_H

#include <stddef.h>

/// RS256 on BoringSSL: the copy swift-nio-ssl compiles into every executable for TLS (CNIOBoringSSL),
/// so signing and verifying add no library to an image and nothing to open at start. This header names
/// no BoringSSL type: the keys are opaque pointers to BoringSSL's `RSA`.

/// An RSA private key from DER: PKCS#8 PrivateKeyInfo (`pkcs8` 1) or PKCS#1 RSAPrivateKey (0). The
/// whole input must be the key, in its one DER encoding, and its numbers must agree. NULL otherwise.
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

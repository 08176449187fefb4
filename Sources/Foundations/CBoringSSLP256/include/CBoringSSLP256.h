#ifndef HERALD_CBORINGSSLP256_H
#define HERALD_CBORINGSSLP256_H

#include <stddef.h>

/// ES256 (ECDSA on P-256 with SHA-256) on BoringSSL: the copy swift-nio-ssl compiles into every
/// executable for TLS (CNIOBoringSSL), as CBoringSSLRSA does for RS256. This header names no BoringSSL
/// type: the keys are opaque pointers to BoringSSL's `EC_KEY`.

/// A P-256 private key from DER: PKCS#8 PrivateKeyInfo (Apple's `.p8` files, without their PEM
/// armour). The whole input must be the key, in its one DER encoding, on the P-256 curve, and its
/// public point must match its scalar. NULL otherwise.
void *_Nullable herald_p256_private_key(const unsigned char *_Nonnull der, size_t count);
void herald_p256_free(void *_Nullable key);

/// The key's public point, uncompressed (0x04 ‖ x ‖ y): 65 bytes written into `point`, or 0.
size_t herald_p256_public_point(const void *_Nonnull key, unsigned char *_Nonnull point, size_t capacity);

/// ECDSA over SHA-256 of `count` bytes, as JWS writes it (RFC 7518 3.4): r ‖ s, 32 bytes each,
/// written into `signature` (64 bytes). 1 on success, else 0.
int herald_es256_sign(const void *_Nonnull key, const unsigned char *_Nullable message, size_t count, unsigned char *_Nonnull signature);

/// 1 when `signature` (r ‖ s, 64 bytes) is the key's ES256 signature of the message, else 0.
int herald_es256_verify(const void *_Nonnull key, const unsigned char *_Nullable message, size_t count, const unsigned char *_Nonnull signature);

#endif

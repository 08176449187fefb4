#include "CBoringSSLRSA.h"

#include <string.h>
#include <CNIOBoringSSL_bn.h>
#include <CNIOBoringSSL_bytestring.h>
#include <CNIOBoringSSL_err.h>
#include <CNIOBoringSSL_evp.h>
#include <CNIOBoringSSL_mem.h>
#include <CNIOBoringSSL_nid.h>
#include <CNIOBoringSSL_rsa.h>
#include <CNIOBoringSSL_sha2.h>

static const unsigned char empty = 0;

/// Whether `marshal` writes `key` back as exactly the `count` bytes at `der`: only the one DER
/// encoding of a key is taken (BoringSSL, like OpenSSL, reads some structures Python's cryptography refuses).
static int is_canonical(const void *key, int (*marshal)(CBB *, const void *), const unsigned char *der, size_t count) {
    CBB encoder;
    uint8_t *encoded = NULL;
    size_t length = 0;
    int canonical = CBB_init(&encoder, count) && marshal(&encoder, key) && CBB_finish(&encoder, &encoded, &length) &&
                    length == count && memcmp(encoded, der, count) == 0;
    if (encoded == NULL) CBB_cleanup(&encoder);
    OPENSSL_free(encoded);
    return canonical;
}

static int marshal_pkcs8(CBB *encoder, const void *key) { return EVP_marshal_private_key(encoder, (const EVP_PKEY *)key); }
static int marshal_pkcs1(CBB *encoder, const void *key) { return RSA_marshal_private_key(encoder, (const RSA *)key); }

void *herald_rsa_private_key(const unsigned char *der, size_t count, int pkcs8) {
    if (count > 1 << 20) return NULL;
    CBS input;
    CBS_init(&input, der, count);
    RSA *rsa = NULL;
    if (pkcs8) {
        EVP_PKEY *key = EVP_parse_private_key(&input);
        if (key != NULL && CBS_len(&input) == 0 && EVP_PKEY_id(key) == EVP_PKEY_RSA && is_canonical(key, marshal_pkcs8, der, count)) {
            rsa = EVP_PKEY_get1_RSA(key);
        }
        EVP_PKEY_free(key);
    } else {
        rsa = RSA_parse_private_key(&input);
        if (rsa != NULL && (CBS_len(&input) != 0 || !is_canonical(rsa, marshal_pkcs1, der, count))) {
            RSA_free(rsa);
            rsa = NULL;
        }
    }
    // The key's numbers must agree (n = p·q, e·d, the CRT values), as Python's cryptography checks:
    // a damaged key is refused here rather than found out by a signature that does not verify.
    if (rsa != NULL && RSA_check_key(rsa) != 1) {
        RSA_free(rsa);
        rsa = NULL;
    }
    ERR_clear_error();
    return rsa;
}

void *herald_rsa_public_key(const unsigned char *n, size_t nCount, const unsigned char *e, size_t eCount) {
    if (nCount > 4096 || eCount > 64) return NULL;
    BIGNUM *modulus = BN_bin2bn(n, nCount, NULL);
    BIGNUM *exponent = BN_bin2bn(e, eCount, NULL);
    // Exponents up to 2⁶⁴, as JWKs may carry them (BoringSSL bounds them at 33 bits otherwise).
    RSA *rsa = modulus && exponent ? RSA_new_public_key_large_e(modulus, exponent) : NULL;
    BN_free(modulus);
    BN_free(exponent);
    ERR_clear_error();
    return rsa;
}

int herald_rsa_bits(const void *key) { return (int)RSA_bits((const RSA *)key); }

void herald_rsa_free(void *key) { RSA_free((RSA *)key); }

size_t herald_rs256_sign(const void *key, const unsigned char *message, size_t count, unsigned char *signature, size_t capacity) {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    SHA256(message ? message : &empty, count, digest);
    unsigned length = 0;
    // PKCS#1 v1.5; BoringSSL's private operation runs in constant time, with blinding.
    int ok = RSA_size((const RSA *)key) <= capacity && RSA_sign(NID_sha256, digest, sizeof digest, signature, &length, (RSA *)key) == 1;
    ERR_clear_error();
    return ok ? length : 0;
}

int herald_rs256_verify(const void *key, const unsigned char *signature, size_t signatureCount, const unsigned char *message,
                        size_t count) {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    SHA256(message ? message : &empty, count, digest);
    int ok = RSA_verify(NID_sha256, digest, sizeof digest, signature, signatureCount, (RSA *)key) == 1;
    ERR_clear_error();
    return ok;
}

#include "CBoringSSLP256.h"

#include <string.h>
#include <CNIOBoringSSL_bn.h>
#include <CNIOBoringSSL_bytestring.h>
#include <CNIOBoringSSL_ec.h>
#include <CNIOBoringSSL_ec_key.h>
#include <CNIOBoringSSL_ecdsa.h>
#include <CNIOBoringSSL_err.h>
#include <CNIOBoringSSL_evp.h>
#include <CNIOBoringSSL_mem.h>
#include <CNIOBoringSSL_nid.h>
#include <CNIOBoringSSL_sha2.h>

static const unsigned char empty = 0;

/// Whether the key written back as PKCS#8 is exactly the `count` bytes at `der`: only the one DER
/// encoding of a key is taken.
static int is_canonical(const EVP_PKEY *key, const unsigned char *der, size_t count) {
    CBB encoder;
    uint8_t *encoded = NULL;
    size_t length = 0;
    int canonical = CBB_init(&encoder, count) && EVP_marshal_private_key(&encoder, key) &&
                    CBB_finish(&encoder, &encoded, &length) && length == count && memcmp(encoded, der, count) == 0;
    if (encoded == NULL) CBB_cleanup(&encoder);
    OPENSSL_free(encoded);
    return canonical;
}

void *herald_p256_private_key(const unsigned char *der, size_t count) {
    if (count > 4096) return NULL;
    CBS input;
    CBS_init(&input, der, count);
    EC_KEY *ec = NULL;
    EVP_PKEY *key = EVP_parse_private_key(&input);
    if (key != NULL && CBS_len(&input) == 0 && EVP_PKEY_id(key) == EVP_PKEY_EC) {
        const EC_KEY *candidate = EVP_PKEY_get0_EC_KEY(key);
        const EC_GROUP *group = candidate ? EC_KEY_get0_group(candidate) : NULL;
        // Apple's keys carry their public point; one without is refused (nothing to check the scalar against).
        if (group != NULL && EC_GROUP_get_curve_name(group) == NID_X9_62_prime256v1 && EC_KEY_get0_public_key(candidate) != NULL &&
            EC_KEY_check_key(candidate) == 1 && is_canonical(key, der, count)) {
            ec = EVP_PKEY_get1_EC_KEY(key);
        }
    }
    EVP_PKEY_free(key);
    ERR_clear_error();
    return ec;
}

void herald_p256_free(void *key) { EC_KEY_free((EC_KEY *)key); }

size_t herald_p256_public_point(const void *key, unsigned char *point, size_t capacity) {
    const EC_KEY *ec = (const EC_KEY *)key;
    size_t length = EC_POINT_point2oct(EC_KEY_get0_group(ec), EC_KEY_get0_public_key(ec), POINT_CONVERSION_UNCOMPRESSED, point, capacity, NULL);
    ERR_clear_error();
    return length;
}

int herald_es256_sign(const void *key, const unsigned char *message, size_t count, unsigned char *signature) {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    SHA256(message ? message : &empty, count, digest);
    // BoringSSL's ECDSA signs in constant time, its nonce derived from the key and the digest with fresh randomness.
    ECDSA_SIG *sig = ECDSA_do_sign(digest, sizeof digest, (const EC_KEY *)key);
    int ok = sig != NULL && BN_bn2bin_padded(signature, 32, sig->r) && BN_bn2bin_padded(signature + 32, 32, sig->s);
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return ok;
}

int herald_es256_verify(const void *key, const unsigned char *message, size_t count, const unsigned char *signature) {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    SHA256(message ? message : &empty, count, digest);
    ECDSA_SIG *sig = ECDSA_SIG_new();
    int ok = sig != NULL && BN_bin2bn(signature, 32, sig->r) != NULL && BN_bin2bn(signature + 32, 32, sig->s) != NULL &&
             ECDSA_do_verify(digest, sizeof digest, sig, (const EC_KEY *)key) == 1;
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return ok;
}

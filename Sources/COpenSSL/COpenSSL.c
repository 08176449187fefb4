#include "COpenSSL.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>

// Each function as OpenSSL's header declares it: __typeof__ takes the declaration's type, so a
// mismatch with the header is a compile error. Nothing here is linked; dlsym fills them in.
#define HERALD_FUNCTIONS(X) \
    X(EVP_Digest) X(EVP_sha256) X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_DigestSignInit) X(EVP_DigestSign) \
    X(EVP_DigestVerifyInit) X(EVP_DigestVerify) X(EVP_PKEY_free) X(EVP_PKEY_get_base_id) X(EVP_PKEY_get_bits) \
    X(EVP_PKEY_get_size) X(d2i_PrivateKey) X(d2i_PKCS8_PRIV_KEY_INFO) X(PKCS8_PRIV_KEY_INFO_free) X(EVP_PKCS82PKEY) \
    X(EVP_PKEY_CTX_new_from_name) X(EVP_PKEY_CTX_free) X(EVP_PKEY_fromdata_init) X(EVP_PKEY_fromdata) \
    X(OSSL_PARAM_BLD_new) X(OSSL_PARAM_BLD_free) X(OSSL_PARAM_BLD_push_BN) X(OSSL_PARAM_BLD_to_param) X(OSSL_PARAM_free) \
    X(BN_bin2bn) X(BN_free) X(ERR_clear_error) X(EVP_PKEY_CTX_new_from_pkey) X(EVP_PKEY_pairwise_check) \
    X(EVP_PKEY2PKCS8) X(i2d_PKCS8_PRIV_KEY_INFO) X(i2d_PrivateKey) X(CRYPTO_free)

#define HERALD_DECLARE(name) static __typeof__(name) *f_##name;
HERALD_FUNCTIONS(HERALD_DECLARE)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char problem[256];

static void load(void) {
    // libcrypto's major version 3 keeps its ABI: the soname says which.
    void *library = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(problem, sizeof problem, "cannot open OpenSSL's libcrypto.so.3 (install libssl3): %s", why ? why : "not found");
        return;
    }
#define HERALD_RESOLVE(name)                                                                     \
    f_##name = (__typeof__(name) *)dlsym(library, #name);                                        \
    if (f_##name == NULL) {                                                                      \
        snprintf(problem, sizeof problem, "OpenSSL's libcrypto.so.3 has no %s", #name);          \
        return;                                                                                  \
    }
    HERALD_FUNCTIONS(HERALD_RESOLVE)
    loaded = 1;
}

int herald_openssl_load(void) {
    pthread_once(&once, load);
    return loaded;
}

static void (*failure_handler)(const char *);

static void *load_in_background(void *unused) {
    (void)unused;
    if (!herald_openssl_load()) failure_handler(problem);
    return NULL;
}

void herald_openssl_load_in_background(void (*failed)(const char *)) {
    failure_handler = failed;
    pthread_t thread;
    if (pthread_create(&thread, NULL, load_in_background, NULL) == 0) {
        pthread_detach(thread);
    } else {
        load_in_background(NULL);
    }
}

const char *herald_openssl_problem(void) {
    pthread_once(&once, load);
    return loaded ? NULL : problem;
}

int herald_sha256(const void *data, size_t count, unsigned char *digest) {
    if (!herald_openssl_load()) return 0;
    static const unsigned char empty = 0;
    unsigned int length = 0;
    return f_EVP_Digest(data ? data : &empty, count, digest, &length, f_EVP_sha256(), NULL) == 1 && length == 32;
}

void *herald_rsa_private_key(const unsigned char *der, size_t count, int pkcs8) {
    if (!herald_openssl_load() || count > 1 << 20) return NULL;
    const unsigned char *cursor = der;
    EVP_PKEY *key = NULL;
    if (pkcs8) {
        PKCS8_PRIV_KEY_INFO *info = f_d2i_PKCS8_PRIV_KEY_INFO(NULL, &cursor, (long)count);
        if (info != NULL) {
            if (cursor == der + count) key = f_EVP_PKCS82PKEY(info);
            f_PKCS8_PRIV_KEY_INFO_free(info);
        }
    } else {
        key = f_d2i_PrivateKey(EVP_PKEY_RSA, NULL, &cursor, (long)count);
        if (key != NULL && cursor != der + count) {
            f_EVP_PKEY_free(key);
            key = NULL;
        }
    }
    if (key != NULL && f_EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
        f_EVP_PKEY_free(key);
        key = NULL;
    }
    // Only the one DER encoding of the key is taken: OpenSSL reads some damaged structures (a PKCS#8
    // version of 0x86, other parameters than NULL) that Python's cryptography refuses.
    if (key != NULL) {
        unsigned char *encoded = NULL;
        int length = -1;
        if (pkcs8) {
            PKCS8_PRIV_KEY_INFO *again = f_EVP_PKEY2PKCS8(key);
            if (again != NULL) length = f_i2d_PKCS8_PRIV_KEY_INFO(again, &encoded);
            f_PKCS8_PRIV_KEY_INFO_free(again);
        } else {
            length = f_i2d_PrivateKey(key, &encoded);
        }
        int canonical = length == (int)count && encoded != NULL && memcmp(encoded, der, count) == 0;
        f_CRYPTO_free(encoded, __FILE__, __LINE__);
        if (!canonical) {
            f_EVP_PKEY_free(key);
            key = NULL;
        }
    }
    // The key's numbers must agree (n = p·q, e·d, the CRT values), as Python's cryptography checks:
    // a damaged key is refused here rather than found out by a signature that does not verify.
    if (key != NULL) {
        EVP_PKEY_CTX *check = f_EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        if (check == NULL || f_EVP_PKEY_pairwise_check(check) != 1) {
            f_EVP_PKEY_free(key);
            key = NULL;
        }
        f_EVP_PKEY_CTX_free(check);
    }
    f_ERR_clear_error();
    return key;
}

void *herald_rsa_public_key(const unsigned char *n, size_t nCount, const unsigned char *e, size_t eCount) {
    if (!herald_openssl_load() || nCount > 4096 || eCount > 64) return NULL;
    EVP_PKEY *key = NULL;
    BIGNUM *modulus = f_BN_bin2bn(n, (int)nCount, NULL);
    BIGNUM *exponent = f_BN_bin2bn(e, (int)eCount, NULL);
    OSSL_PARAM_BLD *builder = f_OSSL_PARAM_BLD_new();
    OSSL_PARAM *parameters = NULL;
    EVP_PKEY_CTX *context = NULL;
    if (modulus && exponent && builder && f_OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, modulus) == 1 &&
        f_OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, exponent) == 1 &&
        (parameters = f_OSSL_PARAM_BLD_to_param(builder)) != NULL &&
        (context = f_EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) != NULL && f_EVP_PKEY_fromdata_init(context) == 1) {
        if (f_EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, parameters) != 1) key = NULL;
    }
    f_EVP_PKEY_CTX_free(context);
    f_OSSL_PARAM_free(parameters);
    f_OSSL_PARAM_BLD_free(builder);
    f_BN_free(modulus);
    f_BN_free(exponent);
    f_ERR_clear_error();
    return key;
}

int herald_rsa_bits(const void *key) { return herald_openssl_load() ? f_EVP_PKEY_get_bits((const EVP_PKEY *)key) : 0; }

void herald_rsa_free(void *key) {
    if (key != NULL && herald_openssl_load()) f_EVP_PKEY_free((EVP_PKEY *)key);
}

size_t herald_rs256_sign(const void *key, const unsigned char *message, size_t count, unsigned char *signature, size_t capacity) {
    if (!herald_openssl_load()) return 0;
    static const unsigned char empty = 0;
    size_t length = capacity;
    EVP_MD_CTX *context = f_EVP_MD_CTX_new();
    // The key's default padding for RSA is PKCS#1 v1.5; OpenSSL signs with blinding, in constant time.
    int ok = context != NULL && f_EVP_DigestSignInit(context, NULL, f_EVP_sha256(), NULL, (EVP_PKEY *)key) == 1 &&
             (size_t)f_EVP_PKEY_get_size((const EVP_PKEY *)key) <= capacity &&
             f_EVP_DigestSign(context, signature, &length, message ? message : &empty, count) == 1;
    f_EVP_MD_CTX_free(context);
    f_ERR_clear_error();
    return ok ? length : 0;
}

int herald_rs256_verify(const void *key, const unsigned char *signature, size_t signatureCount, const unsigned char *message,
                        size_t count) {
    if (!herald_openssl_load()) return 0;
    static const unsigned char empty = 0;
    EVP_MD_CTX *context = f_EVP_MD_CTX_new();
    int ok = context != NULL && f_EVP_DigestVerifyInit(context, NULL, f_EVP_sha256(), NULL, (EVP_PKEY *)key) == 1 &&
             f_EVP_DigestVerify(context, signature, signatureCount, message ? message : &empty, count) == 1;
    f_EVP_MD_CTX_free(context);
    f_ERR_clear_error();
    return ok;
}

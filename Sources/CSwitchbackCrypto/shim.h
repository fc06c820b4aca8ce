#ifndef SWITCHBACK_CRYPTO_SHIM_H
#define SWITCHBACK_CRYPTO_SHIM_H

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/hmac.h>

/// `BIO_get_mem_data` is a macro; Swift cannot call it directly.
static inline long switchback_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

#endif

/* OpenSSL's libcrypto, for `sdimage serve`'s URL signatures (HMAC-SHA256)
 * and ETags (SHA-256): the library libcurl already loads in every process. */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

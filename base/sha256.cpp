// SHA-256 by OpenSSL EVP (see sha256.hpp).
#include "base/sha256.hpp"

#include <openssl/evp.h>

#include "base/error.hpp"

namespace tessera::base {

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1 || len != 32)
    throw Error("SHA-256: OpenSSL EVP_Digest failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(2 * len, '0');
  for (unsigned int k = 0; k < len; ++k) {
    out[2 * k] = hex[md[k] >> 4];
    out[2 * k + 1] = hex[md[k] & 15];
  }
  return out;
}

}  // namespace tessera::base

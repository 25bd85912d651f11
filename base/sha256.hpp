#pragma once
// SHA-256 (FIPS 180-4) of a byte string, by OpenSSL's EVP interface (libcrypto), as lower-case
// hex: the identity of a generated table (Helmholtz, NSE) in logs and outputs.
#include <string>
#include <string_view>

namespace tessera::base {

/// SHA-256 of `bytes` as 64 lower-case hex digits. Thread-safe; throws tessera::Error if
/// libcrypto fails.
std::string sha256_hex(std::string_view bytes);

}  // namespace tessera::base

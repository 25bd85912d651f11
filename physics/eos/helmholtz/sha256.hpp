#pragma once
// SHA-256 (FIPS 180-4) of a byte string, by OpenSSL's EVP interface (libcrypto), as lower-case
// hex: the Helmholtz table's identity in logs and outputs.
#include <string>
#include <string_view>

namespace tessera::eos::helmholtz {

/// SHA-256 of `bytes` as 64 lower-case hex digits. Thread-safe; throws tessera::Error if
/// libcrypto fails.
std::string sha256_hex(std::string_view bytes);

}  // namespace tessera::eos::helmholtz

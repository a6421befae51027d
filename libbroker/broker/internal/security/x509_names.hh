#pragma once

// x509_names: the names of a verified X.509 certificate, as identities in a rules file
// match them ("cn:...", "dns:...", "uri:...", "email:...", credentials.hh).
//
// OpenSSL stays out of this header: callers that hold an SSL connection include OpenSSL
// themselves and pass the certificate (SSL_get0_peer_certificate) as its struct pointer.
// Call only after verification succeeded: the names of an unverified certificate prove
// nothing.

#include "broker/internal/security/credentials.hh"

#include <string>
#include <vector>

struct x509_st; // OpenSSL's X509.
struct ssl_st;  // OpenSSL's SSL.

namespace broker::internal::security {

/// The subject's common names ("cn:<name>") and the subjectAltName entries of type DNS,
/// URI and e-mail ("dns:", "uri:", "email:"), in that order, without duplicates. Names that
/// are not valid names (control characters, embedded NUL bytes, more than 1024 bytes) are
/// left out: they could match nothing a rules file can write. Empty for a null pointer.
std::vector<std::string> certificate_names(const x509_st* cert);

/// The credential of a TLS connection whose handshake completed: its peer's certificate
/// (certificate_names()) if it presented one and OpenSSL verified it; otherwise (null: no
/// TLS, anonymous TLS, no certificate) the anonymous credential.
credential tls_credential(const ssl_st* ssl);

} // namespace broker::internal::security

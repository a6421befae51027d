#include "broker/internal/security/x509_names.hh"

#include "broker/internal/security/credentials.hh"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>

namespace broker::internal::security {

namespace {

/// Appends `kind` + the bytes of `str` if they form a valid name and are new.
void add_name(std::vector<std::string>& out, std::string_view kind, const ASN1_STRING* str) {
  if (str == nullptr)
    return;
  auto* bytes = ASN1_STRING_get0_data(str);
  auto len = ASN1_STRING_length(str);
  if (bytes == nullptr || len <= 0)
    return;
  std::string name{kind};
  name.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(len));
  // An embedded NUL ("good.example\0.evil") or a control character is no name.
  if (name.find('\0') != std::string::npos || !check_certificate_name(name).empty())
    return;
  if (std::find(out.begin(), out.end(), name) == out.end())
    out.push_back(std::move(name));
}

/// The common names of the subject, as UTF-8.
void add_common_names(std::vector<std::string>& out, const X509* cert) {
  auto* subject = X509_get_subject_name(cert);
  if (subject == nullptr)
    return;
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) {
    auto* entry = X509_NAME_get_entry(subject, i);
    auto* data = entry ? X509_NAME_ENTRY_get_data(entry) : nullptr;
    if (data == nullptr)
      continue;
    // Common names come in several string types: convert to UTF-8 first.
    unsigned char* utf8 = nullptr;
    auto len = ASN1_STRING_to_UTF8(&utf8, data);
    if (len < 0 || utf8 == nullptr)
      continue;
    auto* str = ASN1_STRING_new();
    if (str != nullptr && ASN1_STRING_set(str, utf8, len) == 1)
      add_name(out, "cn:", str);
    ASN1_STRING_free(str);
    OPENSSL_free(utf8);
  }
}

void add_alt_names(std::vector<std::string>& out, const X509* cert) {
  auto* names = static_cast<GENERAL_NAMES*>(
    X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr)
    return;
  // DNS names first, then URIs, then e-mail addresses, whatever the certificate's order.
  for (auto [type, kind] : {std::pair{GEN_DNS, "dns:"}, std::pair{GEN_URI, "uri:"},
                            std::pair{GEN_EMAIL, "email:"}})
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      auto* name = sk_GENERAL_NAME_value(names, i);
      if (name != nullptr && name->type == type)
        add_name(out, kind, name->d.ia5);
    }
  GENERAL_NAMES_free(names);
}

} // namespace

std::vector<std::string> certificate_names(const x509_st* cert) {
  std::vector<std::string> result;
  if (cert == nullptr)
    return result;
  add_common_names(result, cert);
  add_alt_names(result, cert);
  return result;
}

credential tls_credential(const ssl_st* ssl) {
  if (ssl == nullptr)
    return credential::anonymous();
  const X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK)
    return credential::anonymous();
  return credential::from_certificate(certificate_names(cert));
}

} // namespace broker::internal::security

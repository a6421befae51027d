#!/bin/sh
# Regenerates the test PKI of tests/web_socket/tls.py (run it in this directory):
#   ca.pem                    the test CA
#   server.pem, server.enc.key  the node's certificate (SAN 127.0.0.1, localhost) and its key,
#                             encrypted with the passphrase 12345 (as Broker's btest key.1.enc.pem)
#   client.pem, client.key    a client certificate from the same CA
#   intruder.pem, intruder.key  a client certificate from another CA (must be refused)
#   manager.pem, logger.pem, worker-1.pem, worker-2.pem (and .key)  nodes of a Zeek cluster
#                             (tests/node/deployments.py, doc/security.md "Examples"): CN
#                             manager.zeek.example and logger.zeek.example; CN worker-N with
#                             the SAN DNS:worker-N.zeek.example
# Test-only keys: they protect nothing. Valid for 100 years, so they never need renewing.
set -eu
days=36500
ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

openssl req -x509 $ec -nodes -days $days -subj "/CN=broker test CA" \
  -keyout "$tmp/ca.key" -out ca.pem
openssl req -x509 $ec -nodes -days $days -subj "/CN=another CA" \
  -keyout "$tmp/other-ca.key" -out "$tmp/other-ca.pem"

leaf() { # name CN ca-cert ca-key extensions
  openssl req $ec -nodes -subj "/CN=$2" -keyout "$tmp/$1.key" -out "$tmp/$1.csr"
  printf '%s\n' "$5" > "$tmp/$1.ext"
  openssl x509 -req -in "$tmp/$1.csr" -CA "$3" -CAkey "$4" -CAcreateserial \
    -days $days -extfile "$tmp/$1.ext" -out "$1.pem"
}
leaf server "broker test node" ca.pem "$tmp/ca.key" \
  "subjectAltName=IP:127.0.0.1,DNS:localhost"
leaf client "broker test client" ca.pem "$tmp/ca.key" "extendedKeyUsage=clientAuth"
leaf intruder "intruder" "$tmp/other-ca.pem" "$tmp/other-ca.key" "extendedKeyUsage=clientAuth"
# Cluster nodes both dial and accept: no extendedKeyUsage, so TLS clients and servers alike.
leaf manager "manager.zeek.example" ca.pem "$tmp/ca.key" "subjectAltName=DNS:manager.zeek.example"
leaf logger "logger.zeek.example" ca.pem "$tmp/ca.key" "subjectAltName=DNS:logger.zeek.example"
leaf worker-1 "worker-1" ca.pem "$tmp/ca.key" "subjectAltName=DNS:worker-1.zeek.example"
leaf worker-2 "worker-2" ca.pem "$tmp/ca.key" "subjectAltName=DNS:worker-2.zeek.example"

openssl pkey -in "$tmp/server.key" -aes256 -passout pass:12345 -out server.enc.key
cp "$tmp/client.key" client.key
cp "$tmp/intruder.key" intruder.key
for n in manager logger worker-1 worker-2; do cp "$tmp/$n.key" "$n.key"; done
rm -f ca.srl

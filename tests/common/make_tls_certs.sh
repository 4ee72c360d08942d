#!/usr/bin/env bash
# make_tls_certs.sh DIR: writes into DIR, with the openssl command line tool, what the TLS
# tests need (made afresh on every run, so no key is ever committed):
#   ca.pem                    the job's CA
#   node.pem node.key         a task certificate from it: SAN IP 127.0.0.1 and DNS localhost,
#                             for serving and for presenting as a client
#   client.pem client.key     a client-only certificate from it
#   other_ca.pem              an unrelated CA
#   other_node.pem other_node.key  a task certificate from the unrelated CA (same SANs)
#   node_encrypted.key        node.key under a passphrase
#   garbage.pem               text that is no PEM at all
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
umask 077

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }

new_ca() {  # name subject
  new_key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 7 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

new_leaf() {  # name ca subject extended-key-usage [subject-alt-names]
  local ext="$1.ext"
  new_key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$4"
    [[ -n "${5:-}" ]] && echo "subjectAltName=$5"
  } >"$ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -set_serial "0x$(openssl rand -hex 8)" \
    -days 7 -extfile "$ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$ext"
}

new_ca ca "distribute test CA"
new_leaf node ca "distribute test node" serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
new_leaf client ca "distribute test client" clientAuth
new_ca other_ca "an unrelated CA"
new_leaf other_node other_ca "a node of another CA" serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
openssl pkey -in node.key -aes256 -passout pass:secret-passphrase -out node_encrypted.key
echo "this is not a certificate" >garbage.pem
rm -f ca.key other_ca.key

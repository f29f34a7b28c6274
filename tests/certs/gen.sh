#!/bin/sh
# Regenerates the test PKI: a root CA, a leaf for localhost/127.0.0.1 signed by
# it, and an unrelated CA used to check that verification fails.
set -e
cd "$(dirname "$0")"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout rootca.key -out rootca.pem -days 36500 -subj "/CN=mpquic test root CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout key.pem -out cert.csr -subj "/CN=localhost"
cat > leaf.ext <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
EXT
openssl x509 -req -in cert.csr -CA rootca.pem -CAkey rootca.key -CAcreateserial \
  -out cert.pem -days 36500 -extfile leaf.ext
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout otherca.key -out otherca.pem -days 36500 -subj "/CN=mpquic unrelated CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
rm -f cert.csr leaf.ext rootca.srl otherca.key

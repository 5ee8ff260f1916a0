package apisource

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// newKeyAndStub generates a private key of keyType (the projection's:
// RSA3072, RSA4096, ECDSAP256, ECDSAP384, ECDSAP521 or ED25519, as the
// API server validated it) and returns it as a PKCS#8 "PRIVATE KEY" PEM
// block, with the stub PKCS#10 request (no subject, no extensions) it
// signs: the proof of possession of a v1 PodCertificateRequest, as the
// kubelet's.
func newKeyAndStub(keyType string) (keyPEM, stub []byte, err error) {
	var key crypto.Signer
	switch keyType {
	case "RSA3072":
		key, err = rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		key, err = rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("unknown key type %q", keyType)
	}
	if err != nil {
		return nil, nil, err
	}
	stub, err = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("while creating the stub PKCS#10 request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("while encoding the private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), stub, nil
}

// cleanChain is the kubelet's cleanCertificateChain: every PEM block of
// the signer's chain, in its order, as a bare CERTIFICATE block (headers
// and text between blocks dropped).
func cleanChain(in []byte) []byte {
	var out bytes.Buffer
	for rest := in; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}))
	}
	return out.Bytes()
}

package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// Key is the signing key with its key ID.
type Key struct {
	Private *ecdsa.PrivateKey
	// ID is upstream's "kid": the unpadded base64url SHA-256 of the
	// public key's PKIX DER (keyIDFromPublicKey).
	ID string
}

// ParseKey parses a PEM "EC PRIVATE KEY" (pki.Bundle.ServiceAccountKey);
// P-256 only: tokens are ES256, as kube-apiserver's with such a key.
func ParseKey(keyPEM []byte) (*Key, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("service-account key: no PEM data")
	}
	k, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	if k.Curve.Params().Name != "P-256" {
		return nil, fmt.Errorf("service-account key: curve %s, want P-256", k.Curve.Params().Name)
	}
	id, err := keyID(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	return &Key{Private: k, ID: id}, nil
}

func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("service-account key ID: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Sign returns the compact JWS of c with issuer set, headers alg and kid
// only (as go-jose's, upstream's signer: no "typ").
func (k *Key) Sign(issuer string, c *Claims) (string, error) {
	c.Issuer = issuer
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	delete(tok.Header, "typ")
	tok.Header["kid"] = k.ID
	s, err := tok.SignedString(k.Private)
	if err != nil {
		return "", fmt.Errorf("sign service-account token: %w", err)
	}
	return s, nil
}

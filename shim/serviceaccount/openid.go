package serviceaccount

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Paths of the service-account issuer discovery documents, as upstream's
// (pkg/serviceaccount/openidmetadata.go).
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
)

// maxAgeSeconds is the documents' Cache-Control max-age: upstream's for
// a static key (GetCacheAgeMaxSeconds).
const maxAgeSeconds = 3600

// OpenIDMetadata is what the discovery paths serve.
type OpenIDMetadata struct {
	Config, Keyset []byte
}

type openIDConfig struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

type jwk struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv"`
	Alg string `json:"alg"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// NewOpenIDMetadata renders the documents for issuer (an https URL
// without query or fragment, as upstream requires) and k; the JWKS URI is
// https://<externalAddress>/openid/v1/jwks, as kube-apiserver's without
// --service-account-jwks-uri, except for the default issuer: its host,
// the kubernetes Service's name, is where pods reach the API (the shim's
// external address is loopback, which a pod's OIDC client cannot reach).
func NewOpenIDMetadata(issuer, externalAddress string, k *Key) (*OpenIDMetadata, error) {
	iss, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("service-account issuer %q: %w", issuer, err)
	}
	if iss.Scheme != "https" || iss.RawQuery != "" || iss.Fragment != "" {
		return nil, fmt.Errorf("service-account issuer %q: must be an https URL without query or fragment", issuer)
	}
	if issuer == DefaultIssuer {
		externalAddress = iss.Host
	}
	jwks := (&url.URL{Scheme: "https", Host: externalAddress, Path: JWKSPath}).String()
	config, err := json.Marshal(openIDConfig{
		Issuer: issuer, JWKSURI: jwks,
		ResponseTypes: []string{"id_token"}, SubjectTypes: []string{"public"},
		SigningAlgs: []string{"ES256"},
	})
	if err != nil {
		return nil, err
	}
	point, err := k.Private.PublicKey.Bytes() // uncompressed: 0x04 || X || Y, a JWK's x and y
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	size := (len(point) - 1) / 2
	keyset, err := json.Marshal(map[string][]jwk{"keys": {{
		Use: "sig", Kty: "EC", Kid: k.ID, Crv: "P-256", Alg: "ES256",
		X: base64.RawURLEncoding.EncodeToString(point[1 : 1+size]),
		Y: base64.RawURLEncoding.EncodeToString(point[1+size:]),
	}}})
	if err != nil {
		return nil, err
	}
	return &OpenIDMetadata{Config: config, Keyset: keyset}, nil
}

// Handlers serve the configuration (application/json) and the key set
// (application/jwk-set+json), publicly cacheable as upstream's.
func (m *OpenIDMetadata) Handlers() (config, keyset http.Handler) {
	serve := func(body []byte, contentType string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", maxAgeSeconds))
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(body)
		})
	}
	return serve(m.Config, "application/json"), serve(m.Keyset, "application/jwk-set+json")
}

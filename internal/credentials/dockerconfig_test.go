package credentials

import (
	"encoding/base64"
	"strings"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		parse   func([]byte, string) (DockerConfig, error)
		in      string
		want    DockerConfig
		wantErr string
	}{
		{
			name: "config.json with every credential kind", parse: ParseConfigJSON,
			in: `{"auths": {
				"a.io": {"auth": "` + b64("u:p:with:colons") + `"},
				"b.io": {"username": "bu", "password": "bp", "email": "x@y"},
				"c.io": {"identitytoken": "idt"},
				"d.io": {"registrytoken": "rt"}
			}, "credsStore": "desktop"}`,
			want: DockerConfig{
				"a.io": {Username: "u", Password: "p:with:colons"},
				"b.io": {Username: "bu", Password: "bp", Email: "x@y"},
				"c.io": {IdentityToken: "idt"},
				"d.io": {RegistryToken: "rt"},
			},
		},
		{
			name: "unpadded auth", parse: ParseConfigJSON,
			in:   `{"auths": {"a.io": {"auth": "` + strings.TrimRight(b64("us:pw"), "=") + `"}}}`,
			want: DockerConfig{"a.io": {Username: "us", Password: "pw"}},
		},
		{
			name: "legacy .dockercfg", parse: ParseDockercfg,
			in:   `{"https://index.docker.io/v1/": {"auth": "` + b64("u:p") + `", "email": "e"}}`,
			want: DockerConfig{"https://index.docker.io/v1/": {Username: "u", Password: "p", Email: "e"}},
		},
		{name: "any: config.json", parse: ParseAny, in: `{"auths": {"a.io": {"username": "u"}}}`, want: DockerConfig{"a.io": {Username: "u"}}},
		{name: "any: legacy", parse: ParseAny, in: `{"a.io": {"username": "u"}}`, want: DockerConfig{"a.io": {Username: "u"}}},
		{name: "not JSON", parse: ParseConfigJSON, in: `auths:`, wantErr: "SRC: not a docker config.json"},
		{name: "bad base64", parse: ParseConfigJSON, in: `{"auths": {"a.io": {"auth": "!!"}}}`, wantErr: `SRC: key "a.io": auth: not base64`},
		{name: "auth without colon", parse: ParseDockercfg, in: `{"a.io": {"auth": "` + b64("nocolon") + `"}}`, wantErr: `SRC: key "a.io": auth: unable to parse auth field`},
		{name: "entry not an object", parse: ParseDockercfg, in: `{"a.io": "x"}`, wantErr: `SRC: key "a.io": json`},
		{name: "legacy not an object", parse: ParseDockercfg, in: `[]`, wantErr: "SRC: not a .dockercfg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse([]byte(tt.in), "SRC")
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for k, w := range tt.want {
				if got[k] != w {
					t.Errorf("%s: got %+v, want %+v", k, got[k], w)
				}
			}
		})
	}
}

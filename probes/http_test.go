package probes

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeServer serves the paths the HTTP tests probe. It records the last
// request and whether the client asked to close the connection.
type probeServer struct {
	last     atomic.Pointer[http.Request]
	unblock  chan struct{}
	srv      *httptest.Server
	nonClose atomic.Int32 // requests without "Connection: close"
}

func newProbeServer(t *testing.T, tls bool) *probeServer {
	t.Helper()
	s := &probeServer{unblock: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		var code int
		if _, err := fmt.Sscan(r.PathValue("code"), &code); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(code)
		fmt.Fprint(w, "body-", code)
	})
	mux.HandleFunc("/redirect-local", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/status/200", http.StatusFound)
	})
	mux.HandleFunc("/redirect-local-fail", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/status/503", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/redirect-loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/redirect-loop", http.StatusFound)
	})
	mux.HandleFunc("/redirect-other-host", func(w http.ResponseWriter, r *http.Request) {
		// Same server, other host name: the kubelet does not follow it.
		loc := strings.Replace(s.srv.URL, "127.0.0.1", "localhost", 1) + "/status/200"
		http.Redirect(w, r, loc, http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("b", 3*maxOutputLength))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.unblock:
		case <-r.Context().Done():
		}
	})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.last.Store(r)
		if !r.Close {
			s.nonClose.Add(1)
		}
		mux.ServeHTTP(w, r)
	})
	s.srv = httptest.NewUnstartedServer(handler)
	// Quiet the "TLS handshake error" lines of the HTTP-to-HTTPS test.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(func() {
		close(s.unblock)
		s.srv.Close()
	})
	return s
}

// probe runs an httpGet probe of path against the server through the pod
// IP 127.0.0.1.
func (s *probeServer) probe(t *testing.T, action v1.HTTPGetAction, timeout time.Duration) (Result, string, error) {
	t.Helper()
	_, port := hostPort(t, s.srv.Listener.Addr().String())
	if action.Port.Type == intstr.Int && action.Port.IntVal == 0 {
		action.Port = intPort(port)
	}
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	req, err := NewHTTPRequest(&action, c, "127.0.0.1")
	if err != nil {
		t.Fatalf("NewHTTPRequest: %v", err)
	}
	return NewHTTPProber().Probe(t.Context(), req, timeout)
}

func TestHTTPProber_B4_Status(t *testing.T) {
	s := newProbeServer(t, false)
	tests := []struct {
		path    string
		want    Result
		wantOut string
	}{
		{"/status/200", Success, "body-200"},
		{"/status/204", Success, ""},
		{"/status/299", Success, "body-299"},
		{"/status/300", Warning, "Probe terminated redirects, Response body: body-300"},
		{"/status/399", Warning, "Probe terminated redirects, Response body: body-399"},
		{"/status/400", Failure, "HTTP probe failed with statuscode: 400"},
		{"/status/404", Failure, "HTTP probe failed with statuscode: 404"},
		{"/status/500", Failure, "HTTP probe failed with statuscode: 500"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			res, out, err := s.probe(t, v1.HTTPGetAction{Path: tc.path}, time.Second)
			if err != nil || res != tc.want || out != tc.wantOut {
				t.Errorf("Probe = %v, %q, %v; want %v, %q", res, out, err, tc.want, tc.wantOut)
			}
		})
	}
}

func TestHTTPProber_B4_Redirects(t *testing.T) {
	s := newProbeServer(t, false)
	tests := []struct {
		path    string
		want    Result
		wantOut string // prefix
	}{
		{"/redirect-local", Success, "body-200"},
		{"/redirect-local-fail", Failure, "HTTP probe failed with statuscode: 503"},
		{"/redirect-other-host", Warning, "Probe terminated redirects, Response body: "},
		{"/redirect-loop", Failure, `Get "/redirect-loop": stopped after 10 redirects`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			res, out, err := s.probe(t, v1.HTTPGetAction{Path: tc.path}, time.Second)
			if err != nil || res != tc.want || !strings.HasPrefix(out, tc.wantOut) {
				t.Errorf("Probe = %v, %q, %v; want %v, %q...", res, out, err, tc.want, tc.wantOut)
			}
		})
	}
}

func TestHTTPProber_B15_HTTPSWithoutVerification(t *testing.T) {
	s := newProbeServer(t, true) // self-signed certificate
	for _, scheme := range []v1.URIScheme{v1.URISchemeHTTPS, "https"} {
		res, out, err := s.probe(t, v1.HTTPGetAction{Scheme: scheme, Path: "/status/200"}, time.Second)
		if err != nil || res != Success || out != "body-200" {
			t.Errorf("scheme %q: Probe = %v, %q, %v; want Success", scheme, res, out, err)
		}
	}
	// Plain HTTP to a TLS server fails with a 400 from Go's TLS server.
	if res, _, _ := s.probe(t, v1.HTTPGetAction{Path: "/status/200"}, time.Second); res != Failure {
		t.Errorf("HTTP to an HTTPS server = %v, want Failure", res)
	}
}

func TestHTTPProber_B15_Headers(t *testing.T) {
	s := newProbeServer(t, false)
	tests := []struct {
		name     string
		headers  []v1.HTTPHeader
		wantUA   string
		wantAcc  []string
		wantHost string
		wantX    string
	}{
		{name: "defaults", wantUA: UserAgent, wantAcc: []string{"*/*"}},
		{
			name:    "overrides",
			headers: []v1.HTTPHeader{{Name: "user-agent", Value: "mine"}, {Name: "Accept", Value: "application/json"}, {Name: "X-Probe", Value: "1"}},
			wantUA:  "mine", wantAcc: []string{"application/json"}, wantX: "1",
		},
		{name: "empty accept removes it", headers: []v1.HTTPHeader{{Name: "Accept", Value: ""}}, wantUA: UserAgent},
		{name: "host override", headers: []v1.HTTPHeader{{Name: "Host", Value: "example.test"}}, wantUA: UserAgent, wantAcc: []string{"*/*"}, wantHost: "example.test"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if res, out, err := s.probe(t, v1.HTTPGetAction{Path: "/status/200", HTTPHeaders: tc.headers}, time.Second); res != Success {
				t.Fatalf("Probe = %v, %q, %v", res, out, err)
			}
			r := s.last.Load()
			if got := r.UserAgent(); got != tc.wantUA {
				t.Errorf("User-Agent = %q, want %q", got, tc.wantUA)
			}
			if got := r.Header.Values("Accept"); strings.Join(got, ",") != strings.Join(tc.wantAcc, ",") {
				t.Errorf("Accept = %q, want %q", got, tc.wantAcc)
			}
			wantHost := tc.wantHost
			if wantHost == "" {
				wantHost = s.srv.Listener.Addr().String()
			}
			if r.Host != wantHost {
				t.Errorf("Host = %q, want %q", r.Host, wantHost)
			}
			if got := r.Header.Get("X-Probe"); got != tc.wantX {
				t.Errorf("X-Probe = %q, want %q", got, tc.wantX)
			}
			if got := r.Header.Get("Accept-Encoding"); got != "" {
				t.Errorf("Accept-Encoding = %q, want none", got)
			}
		})
	}
}

func TestHTTPProber_B4_NoConnectionReuse(t *testing.T) {
	s := newProbeServer(t, false)
	p := NewHTTPProber()
	_, port := hostPort(t, s.srv.Listener.Addr().String())
	for range 3 {
		req, err := NewHTTPRequest(&v1.HTTPGetAction{Path: "/status/200", Port: intPort(port)}, &v1.Container{}, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if res, _, _ := p.Probe(t.Context(), req, time.Second); res != Success {
			t.Fatalf("Probe = %v", res)
		}
	}
	if n := s.nonClose.Load(); n != 0 {
		t.Errorf("%d requests without Connection: close, want 0 (keep-alives must be off)", n)
	}
}

func TestHTTPProber_B4_BodyLimit(t *testing.T) {
	s := newProbeServer(t, false)
	res, out, err := s.probe(t, v1.HTTPGetAction{Path: "/big"}, time.Second)
	if err != nil || res != Success || len(out) != maxOutputLength {
		t.Errorf("Probe = %v, %d bytes, %v; want Success with %d bytes", res, len(out), err, maxOutputLength)
	}
}

func TestHTTPProber_B15_Timeout(t *testing.T) {
	s := newProbeServer(t, false)
	start := time.Now()
	res, out, err := s.probe(t, v1.HTTPGetAction{Path: "/slow"}, 50*time.Millisecond)
	if err != nil || res != Failure || !strings.Contains(out, "Client.Timeout exceeded") {
		t.Errorf("Probe = %v, %q, %v; want a timeout Failure", res, out, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("probe took %v, want about the 50ms timeout", d)
	}
}

func TestHTTPProber_B4_ConnectionRefused(t *testing.T) {
	req, err := NewHTTPRequest(&v1.HTTPGetAction{Path: "/", Port: intPort(closedPort(t))}, &v1.Container{}, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	res, out, err := NewHTTPProber().Probe(t.Context(), req, time.Second)
	if err != nil || res != Failure || !strings.Contains(out, "connection refused") {
		t.Errorf("Probe = %v, %q, %v; want Failure: connection refused", res, out, err)
	}
}

func TestNewHTTPRequest_B15_URL(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}}}
	tests := []struct {
		name   string
		action v1.HTTPGetAction
		want   string
	}{
		{"defaults to pod IP and http", v1.HTTPGetAction{Path: "/healthz", Port: intPort(80)}, "http://10.0.0.5:80/healthz"},
		{"named port", v1.HTTPGetAction{Path: "/m", Port: intstr.FromString("metrics")}, "http://10.0.0.5:9090/m"},
		{"number as string", v1.HTTPGetAction{Port: intstr.FromString("81")}, "http://10.0.0.5:81"},
		{"host and scheme", v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: "node.local", Port: intstr.FromString("http")}, "https://node.local:8080"},
		{"IPv6 pod IP", v1.HTTPGetAction{Path: "/", Port: intPort(80)}, "http://[fd00::5]:80/"},
		{"query kept", v1.HTTPGetAction{Path: "/h?full=1", Port: intPort(80)}, "http://10.0.0.5:80/h?full=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ip := "10.0.0.5"
			if strings.Contains(tc.name, "IPv6") {
				ip = "fd00::5"
			}
			req, err := NewHTTPRequest(&tc.action, c, ip)
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tc.want {
				t.Errorf("URL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResolvePort_B15_NamedPorts(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	tests := []struct {
		port    intstr.IntOrString
		want    int
		wantErr error
	}{
		{intPort(80), 80, nil},
		{intstr.FromString("http"), 8080, nil},
		{intstr.FromString("8081"), 8081, nil},
		{intstr.FromString("grpc"), 0, ErrPortNotFound},
		{intPort(0), 0, nil},
		{intPort(65536), 0, nil},
	}
	for _, tc := range tests {
		got, err := ResolvePort(tc.port, c)
		if got != tc.want {
			t.Errorf("ResolvePort(%v) = %d, want %d", tc.port.String(), got, tc.want)
		}
		if tc.want == 0 && err == nil {
			t.Errorf("ResolvePort(%v): no error", tc.port.String())
		}
		if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("ResolvePort(%v) err = %v, want %v", tc.port.String(), err, tc.wantErr)
		}
	}
}

package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errStop is the fake runtime's answer to every streaming request: the
// fuzz targets check what the handler asked for, not the proxy.
var errStop = errors.New("fake runtime: stop")

// FuzzStreamQuery: GET and POST /exec, /attach and /portForward with any
// query, over SPDY or WebSocket. The handlers never panic; they answer
// 400 without asking the runtime, or ask it for what the query says (the
// kubelet's remotecommand options: "1" is true, a tty drops stderr, at
// least one stream; attach's tty is the container's; a WebSocket
// port-forward's ports are 1-65535, repeated or comma-separated) and
// pass on its error.
// Run with: go test ./server/ -run '^$' -fuzz '^FuzzStreamQuery$' -fuzztime 60s
func FuzzStreamQuery(f *testing.F) {
	for _, seed := range []struct {
		kind      uint8
		query     string
		websocket bool
	}{
		{0, "command=sh&command=-c&command=echo+hi&input=1&output=1&error=1", false},
		{0, "command=sh&input=1&output=1&error=1&tty=1", true},
		{0, "command=ls", false},
		{0, "output=true&error=yes", false},
		{1, "input=1&output=1", false},
		{1, "output=1&error=1&tty=1", true},
		{2, "", false},
		{2, "port=80,8080&port=9090", true},
		{2, "port=0", true},
		{2, "port=", true},
		{2, "port=65536&port=1,", true},
		{2, "port=+80", true},
	} {
		f.Add(seed.kind, seed.query, seed.websocket)
	}
	streamer := &fakeStreamer{err: errStop}
	pods := &fakePods{pods: []*v1.Pod{streamPod()}}
	h := New(Config{Pods: pods, Streamer: streamer, Sandboxes: fakeSandboxes{"uid-s": "sb-s"}}).Handler()
	ws := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}
	f.Fuzz(func(t *testing.T, kind uint8, rawQuery string, websocket bool) {
		var header http.Header
		if websocket {
			header = ws
		}
		q, _ := url.ParseQuery(rawQuery)
		var target, want string
		switch kind % 3 {
		case 0:
			target, want = "/exec/default/shell/app", streamCall("exec cid-app "+fmt.Sprintf("%q ", q[v1.ExecCommandParam]), q, false)
		case 1:
			target, want = "/attach/default/shell/tty", streamCall("attach cid-tty ", q, true)
		default:
			target = "/portForward/default/shell"
			ports, ok := wantPorts(q, websocket)
			if ok {
				want = fmt.Sprintf("portforward sb-s %v", ports)
			}
		}
		before := len(streamer.calls)
		rec := serve(h, http.MethodPost, target, rawQuery, header)
		asked := len(streamer.calls) > before
		switch {
		case want == "":
			if rec.Code != http.StatusBadRequest || asked {
				t.Fatalf("%s?%s: %d %q (runtime asked: %t), want 400 without asking", target, rawQuery, rec.Code, rec.Body.String(), asked)
			}
		case rec.Code != http.StatusInternalServerError || rec.Body.String() != errStop.Error()+"\n":
			t.Fatalf("%s?%s: %d %q, want the runtime's error", target, rawQuery, rec.Code, rec.Body.String())
		case streamer.lastCall() != want:
			t.Fatalf("%s?%s: runtime asked %q, want %q", target, rawQuery, streamer.lastCall(), want)
		}
	})
}

// streamCall is the fakeStreamer call that the documented stream options
// of q give, or "" when they ask for no stream; attach's tty is the
// container's (tty: true).
func streamCall(prefix string, q url.Values, containerTTY bool) string {
	in, out, errs, tty := q.Get("input") == "1", q.Get("output") == "1", q.Get("error") == "1", q.Get("tty") == "1"
	if tty {
		errs = false
	}
	if !in && !out && !errs {
		return ""
	}
	if strings.HasPrefix(prefix, "attach") {
		tty = containerTTY
	}
	return fmt.Sprintf("%stty=%v in=%v out=%v err=%v", prefix, tty, in, out, errs)
}

// wantPorts are the ports of a port-forward request: none over SPDY; over
// WebSocket every comma-separated "port" value, each 1-65535 in decimal
// digits, at least one.
func wantPorts(q url.Values, websocket bool) ([]int32, bool) {
	if !websocket {
		return nil, true
	}
	var ports []int32
	for _, v := range q["port"] {
		for p := range strings.SplitSeq(v, ",") {
			n := 0
			for _, c := range p {
				if c < '0' || c > '9' || n > 65535 {
					return nil, false
				}
				n = n*10 + int(c-'0')
			}
			if p == "" || n < 1 || n > 65535 {
				return nil, false
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, len(ports) > 0
}

// serveRaw is serve for a path that need not be a valid request target.
func serveRaw(h http.Handler, method, path, rawQuery string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Method, req.URL.Path, req.URL.RawQuery, req.Header = method, path, rawQuery, header
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// fuzzSubresources are the subresources RequestAttributes may name.
var fuzzSubresources = []string{"pods", "healthz", "configz", "stats", "metrics", "log", "checkpoint", "statusz", "proxy"}

// FuzzKubeletAPI: any method, path, query and Authorization header
// against the kubelet API (Auth in front of the real handler). Nothing
// panics; a request is authenticated as the documented chain says (a
// reviewed bearer token, else anonymous when allowed; a refused token is
// never anonymous) or answered 401 without reaching the handler; each
// authorization is asked on the node's nodes resource with the method's
// verb and a known subresource; the handler runs only when one is
// allowed (403 otherwise) and never sees an accepted bearer token.
// Run with: go test ./server/ -run '^$' -fuzz '^FuzzKubeletAPI$' -fuzztime 60s
func FuzzKubeletAPI(f *testing.F) {
	for _, seed := range []struct {
		method, path, query, authorization string
		anonymous                          bool
	}{
		{"GET", "/pods", "", "Bearer good", false},
		{"GET", "/pods/", "", "", true},
		{"GET", "/stats/summary", "", "bearer good", false},
		{"POST", "/exec/default/web/app", "command=ls&output=1", "Bearer bad", true},
		{"GET", "/containerLogs/default/web/init", "follow=true&tailLines=1", "Bearer good", false},
		{"GET", "/healthz", "", "Basic Zm9vOmJhcg==", true},
		{"PATCH", "/runningpods/", "", "  Bearer   good  ", false},
		{"DELETE", "/images", "image=x", "Bearer good extra", false},
		{"GET", "//pods/../metrics", "", "Bearer ", true},
		{"OPTIONS", "/logs/", "", "Bearer good", false},
		{"GET", "", "", "", true},
	} {
		f.Add(seed.method, seed.path, seed.query, seed.authorization, seed.anonymous)
	}
	tokens := &fakeTokenReviews{users: map[string]authnv1.UserInfo{"good": {Username: "alice", Groups: []string{"team"}}}}
	authz := &subresourceAuthorizer{allow: map[string]bool{"pods": true, "stats": true, "healthz": true}}
	pods := &fakePods{pods: []*v1.Pod{webPod(terminated(1, "Error")), {ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}}}}
	inner := New(Config{Pods: pods, PodLogsDir: f.TempDir(), Events: testEvents(), Exec: &fakeExecer{}}).Handler()
	handlers := map[bool]http.Handler{}
	var reached bool
	var seenAuthorization string
	for _, anonymous := range []bool{false, true} {
		authn, err := NewAuthenticator(AuthnConfig{Tokens: tokens, Anonymous: anonymous, TokenCacheTTL: -1})
		if err != nil {
			f.Fatal(err)
		}
		handlers[anonymous] = (&Auth{Authenticator: authn, Authorizer: authz, NodeName: "node1"}).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached, seenAuthorization = true, r.Header.Get("Authorization")
			inner.ServeHTTP(w, r)
		}))
	}
	f.Fuzz(func(t *testing.T, method, path, rawQuery, authorization string, anonymous bool) {
		if method == "" || strings.ContainsAny(method, " \t\r\n") {
			return // not an HTTP method token: net/http refuses the request before any handler
		}
		reached, seenAuthorization = false, ""
		authz.asked = authz.asked[:0]
		req := http.Header{}
		if authorization != "" {
			req.Set("Authorization", authorization)
		}
		rec := serveRaw(handlers[anonymous], method, path, rawQuery, req)
		token, hasToken := bearer(authorization)
		user := ""
		switch {
		case hasToken && token == "good":
			user = "alice"
		case !hasToken && anonymous:
			user = anonymousUser
		}
		if user == "" {
			if rec.Code != http.StatusUnauthorized || reached || len(authz.asked) > 0 {
				t.Fatalf("%s %q %q: %d (reached %t, asked %q), want 401", method, path, authorization, rec.Code, reached, authz.asked)
			}
			return
		}
		if len(authz.asked) == 0 {
			t.Fatalf("%s %q: the authorizer was not asked", method, path)
		}
		allowed := false
		for _, a := range authz.asked {
			name, rest, _ := strings.Cut(a, " ")
			verb, sub, _ := strings.Cut(rest, " ")
			if name != user || verb != apiVerb(method) || !slices.Contains(fuzzSubresources, sub) {
				t.Fatalf("%s %q as %s: asked %q", method, path, user, a)
			}
			allowed = allowed || authz.allow[sub]
		}
		if reached != allowed || (!allowed && (rec.Code != http.StatusForbidden || !strings.HasPrefix(rec.Body.String(), "Forbidden (user="+user+", verb="))) {
			t.Fatalf("%s %q as %s: allowed %t, reached %t, %d %q", method, path, user, allowed, reached, rec.Code, rec.Body.String())
		}
		if reached && hasToken && seenAuthorization != "" {
			t.Fatalf("%s %q: the handler saw the accepted bearer token", method, path)
		}
	})
}

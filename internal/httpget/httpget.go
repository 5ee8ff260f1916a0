// Package httpget builds the HTTP request of an httpGet action, the one
// request builder of httpGet probes (probes) and httpGet lifecycle hooks
// (agent), as the kubelet shares NewRequestForHTTPGetAction between them.
package httpget

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NewRequest builds the GET request of action for container c, as the
// kubelet does: scheme defaults to HTTP, host to podIP, port may be a number
// or the name of one of c's ports (ResolvePort). User-Agent defaults to
// userAgent and Accept to "*/*"; an httpHeaders entry overrides them (an
// empty Accept removes it), and a Host entry sets the request's Host. A
// path that does not parse is passed on as a plain path. It fails when the
// port cannot be resolved. Pure; the request has no context.
func NewRequest(action *v1.HTTPGetAction, c *v1.Container, podIP, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolvePort(action.Port, c)
	if err != nil {
		return nil, err
	}
	u := requestURL(scheme, host, port, action.Path)
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header = headers(action.HTTPHeaders, userAgent)
	req.Host = req.Header.Get("Host")
	return req, nil
}

// requestURL joins the URL's parts. A path that does not parse is passed on
// as a plain path, as the kubelet does ("too late to reject it").
func requestURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// headers converts the action's headers and adds the defaults.
func headers(list []v1.HTTPHeader, userAgent string) http.Header {
	h := make(http.Header, len(list)+2)
	for _, e := range list {
		h.Add(e.Name, e.Value)
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", userAgent)
	}
	if _, ok := h["Accept"]; !ok {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	return h
}

// ErrPortNotFound is wrapped by ResolvePort's error when a named port is
// not among the container's ports.
var ErrPortNotFound = errors.New("port not found")

// ResolvePort returns a port number: a number, the name of one of c's
// ports, or (as a last resort, like the kubelet) a number written as a
// string. It fails for an unknown name or a number outside 1-65535.
func ResolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = port.IntValue()
	case intstr.String:
		var err error
		if n, err = portByName(port.StrVal, c); err != nil {
			return 0, err
		}
	default:
		return 0, fmt.Errorf("port %v has no type", port)
	}
	if n <= 0 || n >= 65536 {
		return 0, fmt.Errorf("invalid port number: %d", n)
	}
	return n, nil
}

// portByName looks name up in c's ports, then tries it as a number.
func portByName(name string, c *v1.Container) (int, error) {
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(name); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("port %q of container %q: %w", name, c.Name, ErrPortNotFound)
}

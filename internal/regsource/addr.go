package regsource

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

// Addr is a registry module address.
type Addr struct {
	// Host is the registry's host[:port], lowercase.
	Host                      string
	Namespace, Name, Provider string
}

var (
	addrPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	provPart = regexp.MustCompile(`^[a-z0-9]{1,64}$`)
	hostPart = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$`)
)

// IsAddr reports whether s has the shape of a registry module address,
// NS/NAME/PROVIDER or HOST/NS/NAME/PROVIDER (a //folder suffix allowed).
func IsAddr(s string) bool {
	_, err := ParseAddr(strings.SplitN(s, "//", 2)[0])
	return err == nil
}

// ParseAddr reads NS/NAME/PROVIDER or HOST/NS/NAME/PROVIDER (no //folder).
func ParseAddr(s string) (Addr, error) {
	parts := strings.Split(s, "/")
	var a Addr
	switch len(parts) {
	case 3:
		a.Host = DefaultHost
	case 4:
		a.Host, parts = strings.ToLower(parts[0]), parts[1:]
		if !hostPart.MatchString(a.Host) || !(strings.ContainsAny(a.Host, ".:") || a.Host == "localhost") {
			return Addr{}, fmt.Errorf("%q is not a registry host name", a.Host)
		}
	default:
		return Addr{}, fmt.Errorf("%q is not NAMESPACE/NAME/PROVIDER or HOST/NAMESPACE/NAME/PROVIDER", s)
	}
	a.Namespace, a.Name, a.Provider = parts[0], parts[1], parts[2]
	if !addrPart.MatchString(a.Namespace) || !addrPart.MatchString(a.Name) {
		return Addr{}, fmt.Errorf("%q: namespace and name are letters, digits, - and _", s)
	}
	if !provPart.MatchString(a.Provider) {
		return Addr{}, fmt.Errorf("%q: the provider (last part) is lowercase letters and digits", s)
	}
	return a, nil
}

// String is HOST/NS/NAME/PROVIDER.
func (a Addr) String() string {
	return a.Host + "/" + a.Namespace + "/" + a.Name + "/" + a.Provider
}

// path is NS/NAME/PROVIDER, for the protocol's URLs.
func (a Addr) path() string { return a.Namespace + "/" + a.Name + "/" + a.Provider }

// isLocal reports whether host (with or without port) is this machine:
// localhost, a name under .localhost, or a loopback address.
func isLocal(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// scheme is http for this machine, https for anything else.
func scheme(host string) string {
	if isLocal(host) {
		return "http"
	}
	return "https"
}

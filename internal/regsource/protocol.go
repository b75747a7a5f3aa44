package regsource

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client talks to one registry host, with its token if there is one.
type client struct {
	host  string
	token string
	// tokenErr is why the token could not be read; reported only when
	// the registry asks for one.
	tokenErr error
	// anonymous: no token may be used (Cache.Anonymous).
	anonymous bool
	http      *http.Client
}

func (c *Cache) client(host string) *client {
	if c.Anonymous {
		return &client{host: host, anonymous: true, http: httpClient()}
	}
	tok, err := c.Credentials.Token(host)
	return &client{host: host, token: tok, tokenErr: err, http: httpClient()}
}

// httpClient dials names under .localhost on 127.0.0.1 (RFC 6761: they
// are this machine), and honours the proxy settings of the environment.
func httpClient() *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(strings.ToLower(h), ".localhost") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Minute}
}

// get fetches u; the token goes along only to the registry's own host.
func (c *client) get(ctx context.Context, u *url.URL, accept string) (*http.Response, error) {
	if u.Scheme != "https" && !(u.Scheme == "http" && isLocal(u.Host)) {
		return nil, fmt.Errorf("%s: only https is allowed (plain http only on this machine)", redactURL(u.String()))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.token != "" && strings.EqualFold(u.Host, c.host) {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		resp.Body.Close()
		return nil, c.refused(u, resp.StatusCode)
	}
	return resp, nil
}

func (c *client) refused(u *url.URL, status int) error {
	switch {
	case c.anonymous:
		return fmt.Errorf("%s answered %d: %w", redactURL(u.String()), status, ErrNeedsCredentials)
	case c.tokenErr != nil:
		return fmt.Errorf("%s answered %d, and the token could not be read: %v", redactURL(u.String()), status, c.tokenErr)
	case c.token == "":
		return fmt.Errorf("%s answered %d: no token for %s (add credentials %q { token = ... } to the CLI config, or set TF_TOKEN_%s)",
			redactURL(u.String()), status, c.host, c.host, envHost(c.host))
	default:
		return fmt.Errorf("%s answered %d: the token for %s was refused", redactURL(u.String()), status, c.host)
	}
}

// getJSON fetches u into v; 404 is reported as missing what.
func (c *client) getJSON(ctx context.Context, u *url.URL, what string, v any) error {
	resp, err := c.get(ctx, u, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: %s not found (404)", redactURL(u.String()), what)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", redactURL(u.String()), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s: %s: %w", redactURL(u.String()), what, err)
	}
	return nil
}

// discover returns the base URL of the host's modules.v1 service.
func (c *client) discover(ctx context.Context) (*url.URL, error) {
	wk := &url.URL{Scheme: scheme(c.host), Host: c.host, Path: "/.well-known/terraform.json"}
	var services map[string]any
	if err := c.getJSON(ctx, wk, "service discovery document", &services); err != nil {
		return nil, fmt.Errorf("service discovery: %w", err)
	}
	s, ok := services["modules.v1"].(string)
	if !ok || s == "" {
		return nil, fmt.Errorf("%s offers no modules.v1 service: not a module registry", c.host)
	}
	base, err := wk.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("service discovery: modules.v1 %q: %w", s, err)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	return base, nil
}

// versions lists the versions the registry has of a.
func (c *client) versions(ctx context.Context, base *url.URL, a Addr) ([]string, error) {
	u, err := base.Parse(a.path() + "/versions")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Modules []struct {
			Versions []struct {
				Version string `json:"version"`
			} `json:"versions"`
		} `json:"modules"`
	}
	if err := c.getJSON(ctx, u, "module", &doc); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range doc.Modules {
		for _, v := range m.Versions {
			out = append(out, v.Version)
		}
	}
	return out, nil
}

// location asks where version of a is downloaded from: X-Terraform-Get
// (204 or 200), or a JSON {"location": …}; a relative location is resolved
// against the download URL.
func (c *client) location(ctx context.Context, base *url.URL, a Addr, version string) (string, error) {
	u, err := base.Parse(a.path() + "/" + url.PathEscape(version) + "/download")
	if err != nil {
		return "", err
	}
	resp, err := c.get(ctx, u, "application/json")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return "", fmt.Errorf("%s: %s", redactURL(u.String()), resp.Status)
	}
	loc := resp.Header.Get("X-Terraform-Get")
	if loc == "" && resp.StatusCode == http.StatusOK {
		var doc struct {
			Location string `json:"location"`
		}
		if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) == nil {
			loc = doc.Location
		}
	}
	if loc == "" {
		return "", fmt.Errorf("%s gave no download location (X-Terraform-Get)", redactURL(u.String()))
	}
	return resolveLocation(u, loc)
}

// resolveLocation makes a relative location (./x.tar.gz, /x) absolute
// against the download URL; go-getter forms (git::…, https://…) pass as
// they are.
func resolveLocation(download *url.URL, loc string) (string, error) {
	if strings.Contains(loc, "::") || strings.Contains(loc, "://") {
		return loc, nil
	}
	u, err := download.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("download location %q: %w", loc, err)
	}
	return u.String(), nil
}

// redactURL drops user info and query values (pre-signed URLs carry
// credentials in them) from a URL shown in an error.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.User == nil && u.RawQuery == "") {
		return s
	}
	u.User = nil
	q := u.Query()
	for k := range q {
		if k != "ref" && k != "archive" {
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

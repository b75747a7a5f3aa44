// Package regtest serves the module registry protocol (service discovery,
// versions, download with X-Terraform-Get, and the archives it points at)
// on a random loopback port, for tests of registry module sources.
package regtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Server is a module registry whose modules tests add directly.
type Server struct {
	// Host is registry.localhost:PORT (a .localhost name is this machine).
	Host string

	mu        sync.Mutex
	locations map[string]map[string]string // NS/NAME/PROVIDER → version → download location
	archives  map[string][]byte            // path → .tar.gz
	token     string
	// Refused counts requests refused for want of the token.
	Refused int
}

// Start serves a registry until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{locations: map[string]map[string]string{}, archives: map[string][]byte{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	s.Host = "registry.localhost:" + port
	return s
}

// RequireToken makes every request need Authorization: Bearer token.
func (s *Server) RequireToken(token string) {
	s.mu.Lock()
	s.token = token
	s.mu.Unlock()
}

// AddLocation publishes version of module (NS/NAME/PROVIDER) with the
// download location the registry answers (git::file:///…?ref=v1, a URL).
func (s *Server) AddLocation(module, version, location string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locations[module] == nil {
		s.locations[module] = map[string]string{}
	}
	s.locations[module][version] = location
}

// AddArchive publishes version of module as a .tar.gz of files (slash
// path → content) under one top folder, as GitHub's archives are, served
// by this registry at a relative location with //*.
func (s *Server) AddArchive(t testing.TB, module, version string, files map[string]string) {
	t.Helper()
	p := "/archives/" + strings.ReplaceAll(module, "/", "-") + "-" + version + ".tar.gz"
	s.mu.Lock()
	s.archives[p] = TarGz(t, strings.ReplaceAll(module, "/", "-")+"-"+version+"/", files)
	s.mu.Unlock()
	s.AddLocation(module, version, p+"//*?archive=tar.gz")
}

// TarGz builds a gzipped tar of files under folder prefix (may be "").
func TarGz(t testing.TB, prefix string, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: prefix + n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ServeHTTP answers the protocol's requests.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && r.Header.Get("Authorization") != "Bearer "+s.token {
		s.Refused++
		http.Error(w, "token required", http.StatusUnauthorized)
		return
	}
	switch p := r.URL.Path; {
	case p == "/.well-known/terraform.json":
		writeJSON(w, map[string]string{"modules.v1": "/v1/modules/"})
	case strings.HasPrefix(p, "/archives/"):
		data, ok := s.archives[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	case strings.HasPrefix(p, "/v1/modules/"):
		s.module(w, r, strings.Split(strings.TrimPrefix(p, "/v1/modules/"), "/"))
	default:
		http.NotFound(w, r)
	}
}

// module answers NS/NAME/PROVIDER/versions and NS/NAME/PROVIDER/VERSION/download.
func (s *Server) module(w http.ResponseWriter, r *http.Request, parts []string) {
	if len(parts) < 4 {
		http.NotFound(w, r)
		return
	}
	versions, ok := s.locations[strings.Join(parts[:3], "/")]
	switch {
	case !ok:
		http.NotFound(w, r)
	case len(parts) == 4 && parts[3] == "versions":
		var list []map[string]string
		for v := range versions {
			list = append(list, map[string]string{"version": v})
		}
		sort.Slice(list, func(i, j int) bool { return list[i]["version"] < list[j]["version"] })
		writeJSON(w, map[string]any{"modules": []any{map[string]any{"versions": list}}})
	case len(parts) == 5 && parts[4] == "download" && versions[parts[3]] != "":
		w.Header().Set("X-Terraform-Get", versions[parts[3]])
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		fmt.Fprintln(w, err)
	}
}

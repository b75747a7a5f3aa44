// Package ocitest serves an in-memory OCI registry (the read side of the
// distribution API: manifests and blobs by tag or digest) on a random
// loopback port, for tests that pull module packages.
package ocitest

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Registry is a read-only registry whose content tests push directly.
type Registry struct {
	// Host is host:port of the loopback server.
	Host string

	mu        sync.Mutex
	blobs     map[string][]byte            // digest → content (manifests too)
	tags      map[string]map[string]string // repo → tag → manifest digest
	manifests map[string]bool              // digests that are manifests
	// Pulls counts manifest GETs, so tests can tell a cached pull.
	Pulls int
	// user and password, when set, are required (basic auth).
	user, password string
}

// RequireAuth makes every request need basic auth with user and password.
func (r *Registry) RequireAuth(user, password string) {
	r.mu.Lock()
	r.user, r.password = user, password
	r.mu.Unlock()
}

// Start serves a registry until the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{blobs: map[string][]byte{}, tags: map[string]map[string]string{}, manifests: map[string]bool{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Zip builds a zip archive of files (slash path → content).
func Zip(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PushModule stores files as an OpenTofu module package under repo:tag and
// returns the manifest digest.
func (r *Registry) PushModule(t testing.TB, repo, tag string, files map[string]string) string {
	return r.Push(t, repo, tag, "application/vnd.opentofu.modulepkg", Zip(t, files))
}

// Push stores archive as the one archive/zip layer of a manifest with
// artifactType under repo:tag, and returns the manifest digest.
func (r *Registry) Push(t testing.TB, repo, tag, artifactType string, archive []byte) string {
	t.Helper()
	config := []byte("{}")
	m := ocispec.Manifest{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType,
		Config:       r.blob(ocispec.MediaTypeEmptyJSON, config),
		Layers:       []ocispec.Descriptor{r.blob("archive/zip", archive)},
	}
	m.SchemaVersion = 2
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d := r.blob(ocispec.MediaTypeImageManifest, body).Digest.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.manifests[d] = true
	if r.tags[repo] == nil {
		r.tags[repo] = map[string]string{}
	}
	r.tags[repo][tag] = d
	return d
}

func (r *Registry) blob(mediaType string, data []byte) ocispec.Descriptor {
	d := digest.FromBytes(data)
	r.mu.Lock()
	r.blobs[d.String()] = data
	r.mu.Unlock()
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
}

var route = regexp.MustCompile(`^/v2/(.+)/(manifests|blobs)/([^/]+)$`)

func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	r.mu.Lock()
	user, password := r.user, r.password
	r.mu.Unlock()
	if u, p, ok := req.BasicAuth(); user != "" && (!ok || u != user || p != password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	if req.URL.Path == "/v2/" {
		return
	}
	m := route.FindStringSubmatch(req.URL.Path)
	if m == nil {
		http.NotFound(w, req)
		return
	}
	repo, kind, ref := m[1], m[2], m[3]
	r.mu.Lock()
	if kind == "manifests" {
		if d, ok := r.tags[repo][ref]; ok {
			ref = d
		}
		if !r.manifests[ref] || !r.inRepo(repo, ref) {
			r.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`))
			return
		}
		if req.Method == http.MethodGet {
			r.Pulls++
		}
	}
	data, ok := r.blobs[ref]
	r.mu.Unlock()
	if !ok {
		http.NotFound(w, req)
		return
	}
	if kind == "manifests" {
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
	}
	w.Header().Set("Docker-Content-Digest", ref)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	if req.Method == http.MethodGet {
		w.Write(data)
	}
}

// inRepo reports whether manifest d is tagged in repo (a digest of another
// repository is unknown here, as in a real registry).
func (r *Registry) inRepo(repo, d string) bool {
	for _, v := range r.tags[repo] {
		if v == d {
			return true
		}
	}
	return false
}

// Replace serves data for the blob or manifest digest d: a registry that
// lies about content.
func (r *Registry) Replace(d string, data []byte) {
	r.mu.Lock()
	r.blobs[d] = data
	r.mu.Unlock()
}

// Package ocireg starts Debian's docker-registry (the CNCF distribution
// registry, `registry serve CONFIG.yml`) on a random loopback port for one
// test, with its storage in a temporary folder and, when asked, htpasswd
// authentication; and pushes OpenTofu module packages to it with oras-go,
// as a publisher would. Import it from _test files only.
//
// A missing docker-registry skips the test with a message naming `make
// tools`, except when CI=true or KNIT_REQUIRE_TOOLS=1 (as `make test`
// sets): then it fails, as package testtools does for the other tools.
package ocireg

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	"knit.dev/knit/internal/testtools"
)

// Media types of an OpenTofu module package (as internal/ocisource reads them).
const (
	artifactType = "application/vnd.opentofu.modulepkg"
	zipMediaType = "archive/zip"
)

// Registry is a running docker-registry.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host string
	// User and Password are the one account of a registry started with
	// Auth; empty otherwise.
	User, Password string
	dir            string
	cmd            *exec.Cmd
}

// Option changes how Start runs the registry.
type Option func(*Registry)

// Auth makes the registry require basic authentication (htpasswd, bcrypt)
// for every request, with one account: user and a random password.
func Auth(user string) Option { return func(r *Registry) { r.User = user } }

// Binary returns the path of docker-registry, "" when it is not installed.
func Binary() string {
	for _, name := range []string{"docker-registry"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if p := "/usr/bin/docker-registry"; isExec(p) {
		return p
	}
	return ""
}

// Start runs a registry for t and stops it when t ends.
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test that runs docker-registry")
	}
	bin := Binary()
	if bin == "" {
		msg := "docker-registry not found: run make tools (it installs Debian's docker-registry package)"
		if testtools.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	r := &Registry{dir: t.TempDir()}
	for _, o := range opts {
		o(r)
	}
	if r.User != "" {
		r.Password = testtools.RandomHex(t)
		r.writeHtpasswd(t)
	}
	// A port taken between the probe and the start fails the registry: try again.
	for attempt := 0; ; attempt++ {
		r.Host = fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
		err := r.start(t, bin)
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatal(err)
		}
	}
	return r
}

func (r *Registry) writeHtpasswd(t testing.TB) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "htpasswd"), []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// config is the registry's configuration: storage in the test's folder,
// loopback only, quiet logs.
func (r *Registry) config() string {
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog: {disabled: true}
storage:
  filesystem: {rootdirectory: %q}
  delete: {enabled: true}
http:
  addr: %s
  secret: %s
`, filepath.Join(r.dir, "data"), r.Host, hex.EncodeToString([]byte(r.Host)))
	if r.User != "" {
		cfg += fmt.Sprintf("auth:\n  htpasswd: {realm: knit-test, path: %q}\n", filepath.Join(r.dir, "htpasswd"))
	}
	return cfg
}

// start runs the registry and waits until it answers /v2/.
func (r *Registry) start(t testing.TB, bin string) error {
	t.Helper()
	cfg := filepath.Join(r.dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(r.config()), 0o600); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(r.dir, "registry.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("docker-registry exited: %v\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return fmt.Errorf("docker-registry did not answer on %s", r.Host)
		}
	}
	r.cmd = cmd
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return nil
}

// Stop kills the registry: later requests to it fail.
func (r *Registry) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
	}
}

// DockerConfig writes a docker config.json holding the registry's
// credentials (as `docker login` stores them) into a new folder and
// returns that folder, for DOCKER_CONFIG.
func (r *Registry) DockerConfig(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	basic := base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password))
	body := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, r.Host, basic)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// PushModule pushes files (slash path → content) as an OpenTofu module
// package to repo (a path such as modules/net) and tags it; it returns the
// manifest's digest.
func (r *Registry) PushModule(t testing.TB, repo, tag string, files map[string]string) string {
	t.Helper()
	ctx := context.Background()
	dst, err := remote.NewRepository(r.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	dst.PlainHTTP = true
	cred := auth.Credential{Username: r.User, Password: r.Password}
	dst.Client = &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache(),
		Credential: auth.StaticCredential(r.Host, cred)}
	archive := zipOf(t, files)
	layer := content.NewDescriptorFromBytes(zipMediaType, archive)
	if err := dst.Push(ctx, layer, bytes.NewReader(archive)); err != nil {
		t.Fatalf("push %s layer: %v", repo, err)
	}
	desc, err := oras.PackManifest(ctx, dst, oras.PackManifestVersion1_1, artifactType,
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatalf("push %s manifest: %v", repo, err)
	}
	if err := dst.Tag(ctx, desc, tag); err != nil {
		t.Fatalf("tag %s:%s: %v", repo, tag, err)
	}
	return desc.Digest.String()
}

// zipOf builds a zip archive of files, in name order.
func zipOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err == nil {
			_, err = w.Write([]byte(files[n]))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

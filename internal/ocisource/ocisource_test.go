package ocisource_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"knit.dev/knit/internal/ocisource"
	"knit.dev/knit/internal/ocisource/ocitest"
	"knit.dev/knit/internal/testtools/ocireg"
)

// The real registry (Debian's docker-registry) serves what a publisher
// pushed with oras-go; the in-house one (ocitest) serves only the hostile
// packages a real registry would not hand out.

func TestPullByTagAndDigest(t *testing.T) {
	reg := ocireg.Start(t)
	want := reg.PushModule(t, "mods/file", "v1", map[string]string{"main.tf": "# root\n", "sub/x.tf": "# sub\n"})
	c := &ocisource.Cache{Dir: t.TempDir()}
	dir, dig, err := c.Pull(context.Background(), reg.Host+"/mods/file", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if dig != want {
		t.Fatalf("digest %s, want %s", dig, want)
	}
	for name, body := range map[string]string{"main.tf": "# root\n", "sub/x.tf": "# sub\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != body {
			t.Fatalf("%s: %q %v", name, got, err)
		}
	}
	// A tag the registry does not have: named in the error.
	if _, _, err := c.Pull(context.Background(), reg.Host+"/mods/file", "v9"); err == nil ||
		!strings.Contains(err.Error(), reg.Host+"/mods/file at v9") || !strings.Contains(err.Error(), "no such tag") {
		t.Fatalf("unknown tag: %v", err)
	}
	// By digest, already unpacked: no request to the registry, which is down.
	reg.Stop()
	dir2, dig2, err := c.Pull(context.Background(), reg.Host+"/mods/file", want)
	if err != nil || dir2 != dir || dig2 != want {
		t.Fatalf("digest pull with the registry down: %s %s %v", dir2, dig2, err)
	}
}

func TestPullWithDockerCredentials(t *testing.T) {
	reg := ocireg.Start(t, ocireg.Auth("robot"))
	reg.PushModule(t, "private/file", "v1", map[string]string{"main.tf": "\n"})
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials
	c := &ocisource.Cache{Dir: t.TempDir()}
	_, _, err := c.Pull(context.Background(), reg.Host+"/private/file", "v1")
	if err == nil || strings.Contains(err.Error(), reg.Password) {
		t.Fatalf("without credentials: %v", err)
	}
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t))
	if _, _, err := c.Pull(context.Background(), reg.Host+"/private/file", "v1"); err != nil {
		t.Fatalf("with docker credentials: %v", err)
	}
}

// An Anonymous pull (a preview's) uses no docker login: the htpasswd
// registry refuses it with ErrNeedsCredentials although the server's
// docker config would let it in; a digest the server already unpacked
// names its content and is reused.
func TestPullAnonymously(t *testing.T) {
	reg := ocireg.Start(t, ocireg.Auth("robot"))
	reg.PushModule(t, "private/file", "v1", map[string]string{"main.tf": "# private\n"})
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t))
	dir := t.TempDir()
	anon := &ocisource.Cache{Dir: dir, Anonymous: true}
	_, _, err := anon.Pull(context.Background(), reg.Host+"/private/file", "v1")
	if !errors.Is(err, ocisource.ErrNeedsCredentials) || strings.Contains(err.Error(), reg.Password) ||
		!strings.Contains(err.Error(), "previews of unreviewed branches run without them") {
		t.Fatalf("anonymous pull of a private package: %v", err)
	}
	_, dig, err := (&ocisource.Cache{Dir: dir}).Pull(context.Background(), reg.Host+"/private/file", "v1")
	if err != nil {
		t.Fatalf("the server's pull: %v", err)
	}
	if _, got, err := anon.Pull(context.Background(), reg.Host+"/private/file", dig); err != nil || got != dig {
		t.Fatalf("anonymous pull of a digest the server unpacked: %v", err)
	}
}

func TestPullRefusesBadInput(t *testing.T) {
	reg := ocitest.Start(t)
	good := ocitest.Zip(t, map[string]string{"main.tf": "\n"})
	bomb := zipOf(t, func(zw *zip.Writer) {
		w, _ := zw.Create("big.tf")
		w.Write(bytes.Repeat([]byte{' '}, 2<<20)) // compresses to a few KB
	})
	symlink := zipOf(t, func(zw *zip.Writer) {
		h := &zip.FileHeader{Name: "link.tf"}
		h.SetMode(fs.ModeSymlink | 0o777)
		w, _ := zw.CreateHeader(h)
		w.Write([]byte("/etc/passwd"))
	})
	tampered := reg.Push(t, "mods/tampered", "v1", ocisource.ArtifactType, good)
	_ = tampered
	layer := digest.FromBytes(good).String()
	cases := []struct {
		name, repo, ref, want string
		push                  func()
	}{
		{"unknown digest", "mods/ok", "sha256:" + strings.Repeat("0", 64), "no such tag", func() { reg.Push(t, "mods/ok", "v1", ocisource.ArtifactType, good) }},
		{"not a module package", "mods/image", "v1", "artifactType", func() { reg.Push(t, "mods/image", "v1", "application/vnd.example", good) }},
		{"dot-dot path", "mods/evil", "v1", "leaves the package", func() {
			reg.Push(t, "mods/evil", "v1", ocisource.ArtifactType, ocitest.Zip(t, map[string]string{"../../escape.tf": "x"}))
		}},
		{"absolute path", "mods/abs", "v1", "leaves the package", func() {
			reg.Push(t, "mods/abs", "v1", ocisource.ArtifactType, ocitest.Zip(t, map[string]string{"/tmp/escape.tf": "x"}))
		}},
		{"symlink", "mods/link", "v1", "only files and folders", func() { reg.Push(t, "mods/link", "v1", ocisource.ArtifactType, symlink) }},
		{"size bomb", "mods/bomb", "v1", "over the limit", func() { reg.Push(t, "mods/bomb", "v1", ocisource.ArtifactType, bomb) }},
		{"not a zip", "mods/junk", "v1", "archive", func() { reg.Push(t, "mods/junk", "v1", ocisource.ArtifactType, []byte("not a zip")) }},
		{"layer swapped by the registry", "mods/tampered", "v1", "digest", func() {
			bad := append([]byte{}, good...)
			bad[len(bad)/2] ^= 1 // same size, other bytes
			reg.Replace(layer, bad)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.push != nil {
				tc.push()
			}
			dir := t.TempDir()
			c := &ocisource.Cache{Dir: dir, MaxUnpacked: 1 << 20}
			_, _, err := c.Pull(context.Background(), reg.Host+"/"+tc.repo, tc.ref)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), reg.Host+"/"+tc.repo) {
				t.Fatalf("err %q does not name the repository", err)
			}
			mods, _ := os.ReadDir(filepath.Join(dir, "modules"))
			tmp, _ := os.ReadDir(filepath.Join(dir, "tmp"))
			if len(mods)+len(tmp) != 0 {
				t.Fatalf("left files behind: %v %v", mods, tmp)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.tf")); err == nil {
				t.Fatal("an entry escaped the cache")
			}
		})
	}
	if !errors.Is(func() error {
		_, _, err := (&ocisource.Cache{Dir: t.TempDir()}).Pull(context.Background(), reg.Host+"/mods/evil", "v1")
		return err
	}(), ocisource.ErrRefused) {
		t.Fatal("a hostile archive is not ErrRefused")
	}
}

func zipOf(t *testing.T, fill func(*zip.Writer)) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	fill(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

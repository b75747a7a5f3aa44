package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVendoredChecksums checks every vendored browser file against the
// SHA-256 that scripts/web-assets.sh recorded in VERSIONS, and that no
// file is there unlisted.
func TestVendoredChecksums(t *testing.T) {
	dir := filepath.Join("static", "vendor")
	f, err := os.Open(filepath.Join(dir, "VERSIONS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 || !strings.Contains(fields[0][1:], "@") {
			t.Fatalf("VERSIONS: bad line %q: want package@version file sha256", line)
		}
		name, want := fields[1], fields[2]
		listed[name] = true
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s is listed in VERSIONS but missing: run scripts/web-assets.sh", name)
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, VERSIONS says %s (%s): the file was changed by hand; run scripts/web-assets.sh", name, got, want, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "VERSIONS" && !listed[e.Name()] {
			t.Errorf("%s is vendored but not listed in VERSIONS", e.Name())
		}
	}
	if len(listed) == 0 {
		t.Fatal("VERSIONS lists nothing")
	}
}

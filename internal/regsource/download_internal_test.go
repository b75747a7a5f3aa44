package regsource

import (
	"strings"
	"testing"
)

func TestRemoteRegistryCannotPointAtThisMachine(t *testing.T) {
	for _, loc := range []string{"file:///srv/private.git", "/srv/private", "http://127.0.0.1:9000/x.tar.gz", "https://admin.localhost/x.tar.gz", "ssh://[::1]/r.git", "git@localhost:r.git"} {
		err := reachable("registry.example.com", loc)
		if err == nil || !strings.Contains(err.Error(), "on this machine") {
			t.Errorf("%s from a remote registry: %v", loc, err)
		}
	}
	for _, ok := range [][2]string{{"registry.example.com", "https://github.com/o/r.git"}, {"registry.example.com", "git@github.com:o/r.git"}, {"registry.localhost:8080", "file:///srv/r.git"}, {"127.0.0.1:5000", "http://127.0.0.1:5000/x.tar.gz"}} {
		if err := reachable(ok[0], ok[1]); err != nil {
			t.Errorf("%s from %s: %v", ok[1], ok[0], err)
		}
	}
}

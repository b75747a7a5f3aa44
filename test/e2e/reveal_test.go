package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"knit.dev/knit/internal/testtools/pgtest"
)

// TestLocalRevealIsAudited: knit output --show-sensitive on this machine,
// with no server, on either store, shows the secret only with an entry in
// the audit trail naming who saw it (as a reveal through a server does).
func TestLocalRevealIsAudited(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			w := newWorld(t)
			if store == "postgres" && w.dsn() == "" {
				w.env = append(w.env, "KNIT_STORE_DSN="+pgtest.Start(t).DB(t))
			}
			w.write(map[string]string{"modules/secret/main.tf": `
resource "terraform_data" "s" { input = "x" }
output "password" {
  value     = "hunter2-local"
  sensitive = true
}
`})
			w.writeEnv(envFile("secret", "    - name: vault\n      type: terraform\n      module: {source: ./modules/secret}\n      outputs: [{name: password, sensitive: true}]\n"))
			w.ok("apply", "-f", "env.yaml")
			reveals := func() int {
				var items []struct{ Action, Actor, Component string }
				if err := json.Unmarshal([]byte(w.ok("audit", "qa/secret", "-o", "json").stdout), &items); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, e := range items {
					if e.Action == "reveal-outputs" && e.Actor == "e2e" && e.Component == "vault" {
						n++
					}
				}
				return n
			}
			w.ok("output", "qa/secret", "vault", "password")
			if n := reveals(); n != 0 {
				t.Fatalf("a masked read left %d reveal entries", n)
			}
			if v := strings.TrimSpace(w.ok("output", "qa/secret", "vault", "password", "--show-sensitive").stdout); v != "hunter2-local" {
				t.Fatalf("--show-sensitive gave %q", v)
			}
			if n := reveals(); n != 1 {
				t.Fatalf("the local reveal left %d audit entries, want 1 reveal-outputs by e2e of vault", n)
			}
		})
	}
}

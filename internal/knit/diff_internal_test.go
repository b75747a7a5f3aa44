package knit

import (
	"strings"
	"testing"
)

const diffBase = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop}
spec:
  teamName: shop
  envName: shop
  # the network first
  components:
    - name: net
      type: terraform
      module: {source: ./modules/net}
      variables:
        - {name: cidr, value: 10.0.0.0/16}
    - name: database
      type: terraform
      dependsOn: [net]
      module: {source: ./modules/db}
      variables:
        - {name: storage_gb, value: 20}
    - name: web
      type: terraform
      dependsOn: [database]
      module: {source: ./modules/web}
`

func TestDiffOfAOneWordTypoIsOneSmallHunkNamingItsComponent(t *testing.T) {
	typo := strings.Replace(diffBase, "storage_gb, value: 20", "storage_gbs, value: 20", 1)
	groups := diffFiles([]byte(diffBase), []byte(typo))
	if len(groups) != 1 || len(groups[0].Hunks) != 1 {
		t.Fatalf("groups = %+v, want one group with one hunk", groups)
	}
	g := groups[0]
	h := g.Hunks[0]
	if g.Component != "database" || !strings.HasSuffix(h.Header, " component database") {
		t.Errorf("group %q, hunk %q: want component database named", g.Component, h.Header)
	}
	if !strings.HasPrefix(h.Header, "@@ -16,4 +16,4 @@") {
		t.Errorf("hunk header %q: want the file's line numbers, -16,4 +16,4", h.Header)
	}
	var adds, dels int
	for _, l := range h.Lines {
		switch l.Kind {
		case "add":
			adds++
		case "del":
			dels++
		}
	}
	if adds != 1 || dels != 1 || len(h.Lines) > 7 {
		t.Errorf("hunk has %d lines, +%d -%d; want -1 +1 with a little context:\n%+v", len(h.Lines), adds, dels, h.Lines)
	}
}

func TestDiffGroupsChangesByComponentAndNamesAddedAndRemovedOnes(t *testing.T) {
	b := strings.Replace(diffBase, "      dependsOn: [database]\n", "      dependsOn: [database]\n      autoApprove: false\n", 1)
	b = strings.Replace(b, "teamName: shop", "teamName: shop\n  autoApprove: true", 1)
	b = strings.Replace(b, "    - name: net\n      type: terraform\n      module: {source: ./modules/net}\n      variables:\n        - {name: cidr, value: 10.0.0.0/16}\n", "", 1)
	b += "    - name: cache\n      type: script\n      script: {apply: \"echo '{}'\"}\n"
	groups := diffFiles([]byte(diffBase), []byte(b))
	var titles []string
	for _, g := range groups {
		titles = append(titles, g.Title)
	}
	want := "environment | component web | component cache (added) | component net (removed)"
	if got := strings.Join(titles, " | "); got != want {
		t.Errorf("groups: %s\nwant:   %s", got, want)
	}
}

func TestDiffOfAFileThatDoesNotParseIsWhole(t *testing.T) {
	broken := strings.Replace(diffBase, "    - name: web\n", "    - name: web\n   bad: [\n", 1)
	groups := diffFiles([]byte(diffBase), []byte(broken))
	if len(groups) != 1 || groups[0].Component != "" || len(groups[0].Hunks) != 1 {
		t.Fatalf("groups = %+v, want the whole file in one hunk", groups)
	}
}

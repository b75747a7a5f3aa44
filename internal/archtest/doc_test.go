package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docFile is the architecture this package enforces.
const docFile = "../../docs/architecture.md"

// TestArchitectureDoc: docs/architecture.md stays true. Every package its
// table names exists, and every arrow its list "Arrows that must never
// exist" states is a rule here: `X` → what X must not import (a rule of X
// forbids each), or `X` → anything internal but what it may (no rule of X
// forbids those, one forbids the rest).
func TestArchitectureDoc(t *testing.T) {
	text, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tablePackages(t, string(text)) {
		if !packageDir(name) {
			t.Errorf("docs/architecture.md names %s, which is no package of the module: rename or remove it", name)
		}
	}
	pkgs := load(t)
	all := rules
	for path := range pkgs {
		if path == mod+"store" || strings.HasPrefix(path, mod+"store/") {
			all = append(all, storeRule(path))
		}
	}
	arrows := docArrows(t, string(text))
	if len(arrows) < 20 {
		t.Fatalf("read %d arrows from docs/architecture.md, want its whole list: did its heading or format change?", len(arrows))
	}
	for _, a := range arrows {
		checkArrow(t, a, all, pkgs)
	}
}

// arrow is one `X` → … of the doc: its source packages and its right side.
type arrow struct {
	from        []string
	subpackages bool   // "(and its subpackages)": a rule for each of them too
	file        string // "except in `F`": the one file allowed
	rhs         string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// names are the backticked words of s.
func names(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// docArrows parses the list under "## Arrows that must never exist":
// each item's `X` → … clauses, separated by ";", an explanation after ": ".
func docArrows(t *testing.T, text string) []arrow {
	_, list, ok := strings.Cut(text, "\n## Arrows that must never exist\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Arrows that must never exist"`)
	}
	var items []string
	for line := range strings.Lines(list) {
		switch {
		case strings.HasPrefix(line, "- "):
			items = append(items, strings.TrimSpace(line[2:]))
		case strings.HasPrefix(line, "  ") && len(items) > 0:
			items[len(items)-1] += " " + strings.TrimSpace(line)
		case strings.HasPrefix(line, "## "):
			return parseItems(t, items)
		}
	}
	return parseItems(t, items)
}

var parenthesis = regexp.MustCompile(`\([^)]*\)`)

func parseItems(t *testing.T, items []string) []arrow {
	var out []arrow
	for _, item := range items {
		if !strings.Contains(item, "→") {
			continue // the list's preamble (tests may wire real adapters)
		}
		for clause := range strings.SplitSeq(strings.TrimSuffix(item, "."), ";") {
			lhs, rhs, ok := strings.Cut(clause, "→")
			if !ok || len(names(lhs)) == 0 {
				t.Errorf("docs/architecture.md: cannot read the arrow %q: write `X` → what X must not import", clause)
				continue
			}
			a := arrow{from: names(lhs), subpackages: strings.Contains(lhs, "(and its subpackages)")}
			rhs, _, _ = strings.Cut(parenthesis.ReplaceAllString(rhs, ""), ": ")
			if before, file, ok := strings.Cut(rhs, "except in `"); ok {
				a.file, _, _ = strings.Cut(file, "`")
				rhs = before
			}
			a.rhs = rhs
			out = append(out, a)
		}
	}
	return out
}

// phrases are the doc's words for packages it does not backtick.
var phrases = []struct{ words, pkgs []string }{
	{[]string{"a store or runner implementation", "any adapter"}, []string{mod + "store/sqlite", mod + "store/postgres", mod + "runner/terraform", mod + "runner/script"}},
	{[]string{"the store's port", "the store"}, []string{mod + "store"}},
	{[]string{"the runners"}, []string{mod + "runner"}},
	{[]string{"HCL"}, []string{"github.com/hashicorp/hcl/v2"}},
	{[]string{"OPA"}, []string{"github.com/open-policy-agent/opa/v1/rego"}},
}

// targets are the packages rhs names, from `from` (its own packages).
func targets(rhs, from string, pkgs map[string]*pkg) []string {
	var out []string
	for _, n := range names(rhs) {
		out = append(out, mod+n)
	}
	for _, p := range phrases {
		for _, w := range p.words {
			if strings.Contains(rhs, w) {
				out = append(out, p.pkgs...)
				rhs = strings.ReplaceAll(rhs, w, "")
			}
		}
	}
	if strings.Contains(rhs, "its own packages") {
		for path := range pkgs {
			if strings.HasPrefix(path, mod+from+"/") {
				out = append(out, path)
			}
		}
	}
	return out
}

// checkArrow fails unless the rules of each of a's packages say a.
func checkArrow(t *testing.T, a arrow, all []rule, pkgs map[string]*pkg) {
	for _, from := range a.from {
		rs := rulesOf(all, mod+from)
		if len(rs) == 0 {
			t.Errorf("docs/architecture.md: `%s` → %s: internal/archtest has no rule for %s", from, a.rhs, from)
			continue
		}
		named := targets(a.rhs, from, pkgs)
		if strings.HasPrefix(strings.TrimSpace(a.rhs), "anything internal") {
			for _, ok := range named {
				if forbids(rs, ok) {
					t.Errorf("docs/architecture.md lets %s import %s; internal/archtest forbids it", from, ok)
				}
			}
			if !forbids(rs, mod+"adapters") {
				t.Errorf("docs/architecture.md: %s → anything internal; internal/archtest lets it import internal/adapters", from)
			}
		} else {
			for _, bad := range named {
				if !forbids(rs, bad) {
					t.Errorf("docs/architecture.md: %s → %s must never exist; no rule of internal/archtest forbids it", from, bad)
				}
			}
		}
		if a.file != "" && !hasFile(rs, filepath.Base(a.file)) {
			t.Errorf("docs/architecture.md: %s may import them in %s only; no rule of internal/archtest says so", from, a.file)
		}
		if a.subpackages {
			for path := range pkgs {
				if strings.HasPrefix(path, mod+from+"/") && len(rulesOf(all, path)) == 0 {
					t.Errorf("docs/architecture.md: %s's rule holds for its subpackages; internal/archtest has none for %s", from, path)
				}
			}
		}
	}
}

func rulesOf(all []rule, pkg string) []rule {
	var out []rule
	for _, r := range all {
		if r.Pkg == pkg {
			out = append(out, r)
		}
	}
	return out
}

func forbids(rs []rule, p string) bool {
	for _, r := range rs {
		if r.Forbid(p) {
			return true
		}
	}
	return false
}

func hasFile(rs []rule, file string) bool {
	for _, r := range rs {
		if r.File == file {
			return true
		}
	}
	return false
}

// tablePackages are the packages the doc's table ("| `pkg` | Owns |")
// names in its first column.
func tablePackages(t *testing.T, text string) []string {
	_, table, ok := strings.Cut(text, "\n## The packages and what each owns\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## The packages and what each owns"`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var out []string
	for line := range strings.Lines(table) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "Package") || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		out = append(out, names(parenthesis.ReplaceAllString(cells[1], ""))...)
	}
	if len(out) < 20 {
		t.Fatalf("read %d packages from docs/architecture.md's table, want them all: did its format change?", len(out))
	}
	return out
}

// packageDir reports whether name (from the module root, or under
// internal/) is a directory holding Go files.
func packageDir(name string) bool {
	for _, dir := range []string{filepath.Join("../..", name), filepath.Join("../../internal", name)} {
		if files, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(files) > 0 {
			return true
		}
	}
	return false
}

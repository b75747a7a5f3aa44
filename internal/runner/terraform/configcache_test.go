package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// configCorpus covers every kind of answer parseConfig gives.
var configCorpus = map[string]string{
	"run/main.tf": "terraform {\n  required_version = \">= 1.0\"\n  backend \"s3\" {\n    bucket = var.bucket # static\n  }\n}\n" +
		"provider \"aws\" {\n  region = \"eu-west-1\"\n}\n" +
		"resource \"aws_s3_bucket\" \"b\" {\n  provider = aws.east\n  encryption {\n    x = 1\n  }\n}\n" +
		"data \"http\" \"h\" {}\nephemeral \"random_password\" \"p\" {}\n" +
		"check \"c\" {\n  data \"dns_a_record_set\" \"d\" {}\n}\n" +
		"module \"m\" {\n  source = \"./m\"\n  version = var.v\n}\n",
	"lib/enc.tofu":           "terraform {\n  encryption {\n    method \"unencrypted\" \"u\" {}\n  }\n  cloud {\n    organization = \"o\"\n  }\n}\n",
	"lib/main.tf.json":       `{"terraform": {"backend": {"gcs": {}}, "encryption": {}}, "resource": {"null_resource": {"n": {}}}}`,
	"lib/broken.tf":          "terraform {\n  backend \"azurerm\" {\n  encryption {\n",
	"run/" + backendFile:     "terraform {\n  backend \"local\" {\n    path = \"/x/terraform.tfstate\"\n  }\n}\n",
	"run/enc.tofu":           "terraform {\n  encryption {\n    key_provider \"pbkdf2\" \"k\" {\n      passphrase = var.p\n    }\n  }\n}\n",
	"run/vars.tf":            "variable \"n\" {\n  type = number\n}\noutput \"o\" {\n  value = var.n\n}\n",
	"run/nested/inner.tofu":  "module \"deep\" {\n  source = \"git::https://example.com/m.git?ref=v1\"\n}\n",
	"run/formatted/alike.tf": "module   \"m\"   {\n  # a comment\n  source =   \"./m\"\n\n}\n",
}

// TestTheConfigCacheVersionFollowsTheParser pins what parseConfig says of
// a corpus under configCacheVersion: work dirs keep those answers on disk,
// so a parser that answers differently must come with a new version.
func TestTheConfigCacheVersionFollowsTheParser(t *testing.T) {
	t.Parallel()
	h := sha256.New()
	for _, rel := range slices.Sorted(maps.Keys(configCorpus)) {
		fc := parseConfig(rel, []byte(configCorpus[rel]))
		b, err := json.Marshal(fc.entry())
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(rel + "\n"))
		h.Write(append(b, '\n'))
	}
	const want = "knit-config-1 ac2bfa77aa437eb35e42337e79c34a7d5064d23f3079944c2efa0482640167a1"
	if got := configCacheVersion + " " + hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("the parser's answers for the corpus changed (%q, pinned %q): work dirs keep the old answers, so give configCacheVersion a new name and pin the new digest", got, want)
	}
}

// TestAnUnchangedModuleIsNotParsedAgain: a second process (a new Runner)
// reads what the first parsed from the work dir, and parses only a file
// whose content changed; a cache of another version or unreadable is
// ignored, never trusted.
func TestAnUnchangedModuleIsNotParsedAgain(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	layoutOf := func(files map[string]string) *layout {
		l := &layout{sub: "run", files: map[string]file{}}
		for rel, content := range files {
			l.files[rel] = file{data: []byte(content), mode: 0o644}
		}
		return l
	}
	type answer struct {
		backend    string
		encryption bool
		digest     string
	}
	read := func(r *Runner, l *layout) answer {
		t.Helper()
		r.loadConfigs(wd)
		backend, enc, err := r.moduleSettings(l)
		if err != nil {
			t.Fatal(err)
		}
		digest, err := r.initDigest(l, func() (string, error) { return "inputs", nil })
		if err != nil {
			t.Fatal(err)
		}
		if err := r.saveConfigs(wd, l); err != nil {
			t.Fatal(err)
		}
		return answer{backend, enc, digest}
	}
	files := maps.Clone(configCorpus)
	first := New(Binary{}, Options{})
	want := read(first, layoutOf(files))
	if n := first.configs.parsed.Load(); n != int64(len(files)) {
		t.Fatalf("first runner parsed %d files, want %d", n, len(files))
	}
	if want.backend == "" || !want.encryption {
		t.Fatalf("corpus answer %+v: want a backend and encryption", want)
	}

	second := New(Binary{}, Options{})
	if got := read(second, layoutOf(files)); got != want {
		t.Errorf("from the cache: %+v, parsed: %+v", got, want)
	}
	if n := second.configs.parsed.Load(); n != 0 {
		t.Errorf("an unchanged module was parsed again: %d files", n)
	}

	files["run/vars.tf"] += "provider \"random\" {}\n"
	third := New(Binary{}, Options{})
	changed := read(third, layoutOf(files))
	if n := third.configs.parsed.Load(); n != 1 {
		t.Errorf("after one file changed, %d files were parsed, want 1", n)
	}
	if changed.digest == want.digest {
		t.Error("a new provider block did not change the init digest read through the cache")
	}
	if n, again := New(Binary{}, Options{}), layoutOf(files); read(n, again) != changed || n.configs.parsed.Load() != 0 {
		t.Error("the rewritten cache does not hold the changed file")
	}

	cache := filepath.Join(wd, configCacheFile)
	for name, content := range map[string]string{
		"another version": `{"version":"knit-config-0","files":{}}`,
		"unreadable":      `{"version":`,
	} {
		data, err := os.ReadFile(cache)
		if err != nil {
			t.Fatal(err)
		}
		var doc configCacheDoc
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if name == "another version" {
			// The same entries under an older name: still ignored.
			doc.Version = "knit-config-0"
			data, _ = json.Marshal(doc)
		} else {
			data = []byte(content)
		}
		if err := os.WriteFile(cache, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r := New(Binary{}, Options{})
		if got := read(r, layoutOf(files)); got != changed {
			t.Errorf("%s cache: %+v, want %+v", name, got, changed)
		}
		if n := r.configs.parsed.Load(); n != int64(len(files)) {
			t.Errorf("%s cache: parsed %d files, want all %d", name, n, len(files))
		}
	}
}

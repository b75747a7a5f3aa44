package terraform

import (
	"strings"
	"testing"
)

func TestModuleSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, rel, content string
		backend            string
		encryption         bool
	}{
		{"none", "run/main.tf", `terraform { required_version = ">= 1.0" }`, "", false},
		{"s3", "run/main.tf", "terraform {\n  backend \"s3\" {\n    bucket = \"b\"\n  }\n}", "s3", false},
		{"local", "run/main.tf", "terraform {\n  backend \"local\" {\n    path = \"x\"\n  }\n}", "local", false},
		{"cloud", "run/versions.tf", "terraform {\n  cloud {\n    organization = \"o\"\n  }\n}", "cloud", false},
		{"json", "run/main.tf.json", `{"terraform": {"backend": {"s3": {}}}}`, "s3", false},
		{"json encryption", "run/main.tf.json", `{"terraform": {"encryption": {"state": {"enforced": true}}}}`, "", true},
		{"comment mention", "run/main.tf", `# the backend "s3" is configured elsewhere`, "", false},
		{"other folder", "other/main.tf", "terraform {\n  backend \"s3\" {}\n}", "", false},
		{"not configuration", "run/notes.md", "terraform {\n  backend \"s3\" {}\n}", "", false},
		{"encryption", "run/enc.tofu", "terraform {\n  encryption {\n    method \"unencrypted\" \"u\" {}\n  }\n}", "", true},
		// A resource's own nested block called encryption is not the
		// module encrypting its state: knit must still encrypt.
		{"resource block named encryption", "run/main.tf", "resource \"google_storage_bucket\" \"b\" {\n  encryption {\n    default_kms_key_name = \"k\"\n  }\n}", "", false},
		// A file HCL cannot read is judged by its text, towards "declares".
		{"unparsable", "run/main.tf", "terraform {\n  encryption {\n", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &layout{sub: "run", files: map[string]file{
				tc.rel: {data: []byte(tc.content)},
				// knit's own backend file never counts.
				"run/" + backendFile: {data: []byte("terraform {\n  backend \"local\" {}\n}")},
			}}
			r := New(Binary{}, Options{})
			backend, enc, err := r.moduleSettings(l)
			if err != nil || backend != tc.backend || enc != tc.encryption {
				t.Errorf("moduleSettings = %q, %v, %v; want %q, %v", backend, enc, err, tc.backend, tc.encryption)
			}
		})
	}
}

// TestInitDigest: init runs again for what init reads (providers, module
// calls, backend), not for edits it ignores.
func TestInitDigest(t *testing.T) {
	t.Parallel()
	const base = `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
resource "local_file" "f" {
  filename = "a"
  content  = "hello"
}
output "o" { value = local_file.f.id }
`
	digest := func(main string, extra ...string) string {
		t.Helper()
		l := &layout{sub: ".", files: map[string]file{"main.tf": {data: []byte(main)}, inputsFile: {data: []byte(`{"v": 1}`)}}}
		for i := 0; i+1 < len(extra); i += 2 {
			l.files[extra[i]] = file{data: []byte(extra[i+1])}
		}
		r := New(Binary{}, Options{})
		d, err := r.initDigest(l, func() (string, error) { return r.inputsDigest(l) })
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	same := map[string]string{
		"a resource argument":             strings.Replace(base, `"hello"`, `"bye"`, 1),
		"an output":                       base + "output \"p\" { value = 1 }\n",
		"a resource of the same provider": base + "resource \"local_file\" \"g\" {\n  filename = \"b\"\n  content = \"\"\n}\n",
		"a comment and layout":            "# note\n" + strings.ReplaceAll(base, "  ", "    "),
	}
	for what, text := range same {
		if digest(text) != digest(base) {
			t.Errorf("changing %s changed the init digest", what)
		}
	}
	differs := map[string]string{
		"a provider version":           strings.Replace(base, `"1.4.0"`, `"1.4.1"`, 1),
		"a resource of a new provider": base + "resource \"null_resource\" \"n\" {}\n",
		"a module call":                base + "module \"m\" { source = \"./m\" }\n",
		"a provider block":             base + "provider \"aws\" {}\n",
		"a resource's provider":        strings.Replace(base, `filename = "a"`, "provider = local.other\n  filename = \"a\"", 1),
		"a backend":                    base + "terraform {\n  backend \"s3\" {}\n}\n",
	}
	for what, text := range differs {
		if digest(text) == digest(base) {
			t.Errorf("changing %s left the init digest alone", what)
		}
	}
	// A nested module's configuration counts too.
	if digest(base, "modules/m/main.tf", "resource \"aws_s3_bucket\" \"b\" {}") == digest(base) {
		t.Error("a nested module's new provider left the init digest alone")
	}
	// Inputs count only when a module call refers to variables (early evaluation).
	static := base + "module \"m\" { source = \"./m/${var.v}\" }\n"
	if digest(static) == digest(static, inputsFile, `{"v": 2}`) {
		t.Error("a module source built from an input ignores the input")
	}
	if digest(base) != digest(base, inputsFile, `{"v": 2}`) {
		t.Error("inputs changed the init digest of a module that does not use them in init")
	}
}

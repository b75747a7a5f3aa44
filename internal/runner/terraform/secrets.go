package terraform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"knit.dev/knit/internal/runner"
)

// encryptedMarker, in a component's work dir, says knit encrypts its state
// and saved plans: commands that run without the layout (apply of a saved
// plan, outputs) learn it here.
const encryptedMarker = "encrypted.knit"

// keyVar carries the state key to the key provider in the tool's
// environment (never in a file or argv).
const keyVar = "TF_KNIT_STATE_KEY"

// keyProvider is OpenTofu's "external" key provider protocol answered by
// a one-line shell script: the header, then the key from keyVar for both
// encryption and decryption. A PBKDF2 passphrase would cost every tool run
// hundreds of milliseconds of key stretching; the key is already random.
// OpenTofu runs the provider several times per command (3 to 5), so the
// script uses only shell builtins: reading its input to the end with read
// rather than cat saves a process each time.
const keyProvider = `printf '%s\n' '{"magic":"OpenTofu-External-Key-Provider","version":1}'; while read -r _; do :; done; ` +
	`printf '{"keys":{"encryption_key":"%s","decryption_key":"%s"},"meta":{}}' "$` + keyVar + `" "$` + keyVar + `"`

// encryption is OpenTofu's state and plan encryption as knit configures it
// through TF_ENCRYPTION: AES-GCM under knit's per-data-dir state key.
// With fallback, plaintext state and plans from before are still read and
// written back encrypted; OpenTofu warns of any unencrypted method
// configured ("Unencrypted method configured … This is a security risk"),
// so the fallback is there only while plaintext is left (plaintextLeft).
func encryption(fallback bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `key_provider "external" "knit" {
  command = ["/bin/sh", "-c", %q]
}
method "aes_gcm" "knit" {
  keys = key_provider.external.knit
}
`, keyProvider)
	if fallback {
		b.WriteString("method \"unencrypted\" \"plaintext\" {}\n")
	}
	for _, target := range []string{"state", "plan"} {
		fmt.Fprintf(&b, "%s {\n  method = method.aes_gcm.knit\n", target)
		if fallback {
			b.WriteString("  fallback {\n    method = method.unencrypted.plaintext\n  }\n")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// fallbackMarker, in a component's work dir, says its module keeps state
// in a local file of its own choosing, which knit cannot look at: the
// plaintext fallback stays configured.
const fallbackMarker = "fallback.knit"

// plaintextLeft reports whether the work dir wd still holds state or a
// saved plan written before knit encrypted them (or may: a state file
// that cannot be read), or the module keeps its state where knit cannot
// look (fallbackMarker).
func plaintextLeft(wd string) bool {
	if exists(filepath.Join(wd, fallbackMarker)) || exists(filepath.Join(wd, importedMarker)) {
		return true
	}
	if state, err := os.ReadFile(filepath.Join(wd, stateFile)); err == nil || !os.IsNotExist(err) {
		var st struct {
			EncryptedData json.RawMessage `json:"encrypted_data"`
		}
		if err != nil || json.Unmarshal(state, &st) != nil || st.EncryptedData == nil {
			return true
		}
	}
	return isZip(filepath.Join(wd, planFile)) // a plaintext plan is a zip archive
}

// isZip reports whether the file at p starts as a zip archive does.
func isZip(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	return n == 4 && string(head) == "PK\x03\x04"
}

// encrypter decides and configures what the tool's state and plans are
// kept as: encrypted by knit (OpenTofu's TF_ENCRYPTION under key), and the
// secret inputs it passes through the environment.
type encrypter struct {
	key  []byte // Options.EncryptionKey
	tool string // Options.ToolVersion
}

// openTofu reports whether the tool can encrypt state and plans.
func (r encrypter) openTofu() bool { return strings.HasPrefix(r.tool, "OpenTofu") }

// encrypts decides, for a laid-out component, whether knit encrypts its
// state and plans (OpenTofu, state in a local file, no encryption block of
// the module's: a module with a remote backend or encryption of its own
// keeps it to itself) and records the decision in the work dir.
func (r encrypter) encrypts(wd string, l *layout) (bool, error) {
	local := l.backend == "" || l.backend == "local"
	on := r.openTofu() && len(r.key) > 0 && local && !l.ownEncryption
	marker := filepath.Join(wd, encryptedMarker)
	if !on {
		if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
			return false, err
		}
		return false, nil
	}
	if err := setMarker(filepath.Join(wd, fallbackMarker), l.backend == "local",
		"this component's module keeps its state in a local file of its own: knit reads plaintext state too\n"); err != nil {
		return false, err
	}
	if exists(marker) { // written at the first run; every later one only looks
		return true, nil
	}
	return true, os.WriteFile(marker, []byte("state and plans of this component are encrypted by knit (OpenTofu TF_ENCRYPTION)\n"), 0o600)
}

// setMarker creates the marker file p with text when on, and removes it
// otherwise.
func setMarker(p string, on bool, text string) error {
	if !on {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	if exists(p) {
		return nil
	}
	return os.WriteFile(p, []byte(text), 0o600)
}

// toolEnv is what one command of a component adds to the tool's
// environment: the encryption settings, and each sensitive input as
// TF_VAR_<name>, so that no secret input is ever written to a file.
func (r encrypter) toolEnv(wd string, encrypted bool, secret runner.Inputs) (map[string]string, error) {
	m := map[string]string{}
	if encrypted {
		m["TF_ENCRYPTION"] = encryption(plaintextLeft(wd))
		m[keyVar] = base64.StdEncoding.EncodeToString(r.key)
	}
	for name, v := range secret {
		s, ok := v.(string)
		if !ok {
			var err error
			if s, err = hclLiteral(v); err != nil {
				return nil, fmt.Errorf("input %s: %w", name, err)
			}
		}
		m["TF_VAR_"+name] = s
	}
	return m, nil
}

// hclLiteral renders a value that is not a string as the HCL expression the
// tool parses a TF_VAR_ value with, for variables of a complex or any type
// (a variable with a primitive type takes it as a literal and converts it).
// It is JSON's shape, but strings are HCL strings: "${" and "%{" are
// escaped, so a secret holding them is not read as a template. A variable
// with no type constraint takes any TF_VAR_ value as a string; declare
// the type of a variable that receives a list or map.
func hclLiteral(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var generic any
	if err := d.Decode(&generic); err != nil {
		return "", err
	}
	var out strings.Builder
	writeHCL(&out, generic)
	return out.String(), nil
}

func writeHCL(w *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		w.WriteString("null")
	case bool:
		fmt.Fprint(w, v)
	case json.Number:
		w.WriteString(v.String())
	case string:
		w.WriteString(hclString(v))
	case []any:
		w.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				w.WriteString(", ")
			}
			writeHCL(w, e)
		}
		w.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteString(", ")
			}
			w.WriteString(hclString(k) + " = ")
			writeHCL(w, v[k])
		}
		w.WriteByte('}')
	}
}

// hclString quotes s as an HCL string literal that is never a template.
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		case (r == '$' || r == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteRune(r)
			b.WriteRune(r) // $${ and %%{ are a literal ${ and %{
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// splitSecret takes the sensitive inputs out of in.
func splitSecret(in runner.Inputs, sensitive map[string]bool) (plain, secret runner.Inputs) {
	plain, secret = runner.Inputs{}, runner.Inputs{}
	for k, v := range in {
		if sensitive[k] {
			secret[k] = v
		} else {
			plain[k] = v
		}
	}
	return plain, secret
}

// warnUnencrypted tells, once per command, that Terraform keeps this
// component's secrets in clear in its state and plan files.
func (r encrypter) warnUnencrypted(log io.Writer, wd string, c runner.Component) {
	if r.openTofu() {
		return
	}
	secret := len(c.Sensitive) > 0
	for _, o := range c.Def.Outputs {
		secret = secret || o.Sensitive
	}
	if !secret {
		return
	}
	names := make([]string, 0, len(c.Sensitive))
	for n := range c.Sensitive {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(log, "knit: warning: %s cannot encrypt state or plans: %s and %s hold %s's secrets (%s) in clear; use OpenTofu, or a backend that encrypts\n",
		r.tool, filepath.Join(wd, stateFile), filepath.Join(wd, planFile), compName(c), strings.Join(append(names, "sensitive outputs"), ", "))
}

// markedSession is a session for a command that runs without the layout
// (apply of a saved plan, outputs, a destroy from the last copy): whether
// state and plans are encrypted is read from the work dir's marker.
func (r *Runner) markedSession(c runner.Component, dir string, secret runner.Inputs) (*session, error) {
	wd, err := workDir(c)
	if err != nil {
		return nil, err
	}
	extra, err := r.crypt.toolEnv(wd, exists(filepath.Join(wd, encryptedMarker)), secret)
	if err != nil {
		return nil, err
	}
	write := r.state.env(c, exists(filepath.Join(wd, sharedMarker)), extra)
	return r.session(dir, c.Log, extra, write), nil
}

// EncryptionEnv is the environment that lets OpenTofu read state and plans
// knit encrypted with key, and plaintext ones (for tools and tests that
// inspect them).
func EncryptionEnv(key []byte) []string {
	return []string{"TF_ENCRYPTION=" + encryption(true), keyVar + "=" + base64.StdEncoding.EncodeToString(key)}
}

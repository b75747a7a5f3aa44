package regsource

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Credentials find a registry's API token where OpenTofu finds it: a
// TF_TOKEN_<host> variable (dots as _, hyphens as __), else a
// `credentials "HOST" { token = "…" }` block of the CLI config file (the
// one knit hands the tool, else ~/.tofurc or ~/.terraformrc), else
// ~/.terraform.d/credentials.tfrc.json (what `tofu login` writes). The
// token is never put in argv, a log, an error or a file.
type Credentials struct {
	// CLIConfig is the CLI config file; "" for the home's.
	CLIConfig string
	// Env is the environment to read TF_TOKEN_* from (KEY=VALUE).
	Env []string
	// Home is the home folder; "" for $HOME.
	Home string
}

// Token returns the token for host ("" with no error when there is none).
func (c Credentials) Token(host string) (string, error) {
	host = strings.ToLower(host)
	if tok := c.envToken(host); tok != "" {
		return tok, nil
	}
	home := c.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	files := []string{c.CLIConfig}
	if c.CLIConfig == "" && home != "" {
		files = []string{filepath.Join(home, ".tofurc"), filepath.Join(home, ".terraformrc")}
	}
	for _, f := range files {
		tok, err := configToken(f, host)
		if err != nil || tok != "" {
			return tok, err
		}
	}
	if home == "" {
		return "", nil
	}
	return loginToken(filepath.Join(home, ".terraform.d", "credentials.tfrc.json"), host)
}

// envHost is host as a TF_TOKEN_ variable names it.
func envHost(host string) string {
	return strings.NewReplacer(".", "_", "-", "__").Replace(host)
}

func (c Credentials) envToken(host string) string {
	want := "TF_TOKEN_" + envHost(host)
	tok := ""
	for _, kv := range c.Env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "TF_TOKEN_") {
			continue
		}
		// Dots may be written as such too; the last definition wins.
		if strings.EqualFold(name, want) || strings.EqualFold(strings.ReplaceAll(name, ".", "_"), want) {
			tok = val
		}
	}
	return tok
}

// configToken reads the credentials block for host in CLI config file p.
func configToken(p, host string) (string, error) {
	if p == "" {
		return "", nil
	}
	src, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("CLI config: %w", err)
	}
	if strings.HasSuffix(p, ".json") {
		return jsonToken(src, p, host)
	}
	f, diags := hclsyntax.ParseConfig(src, p, hcl.InitialPos)
	if diags.HasErrors() {
		return "", fmt.Errorf("CLI config %s: %s", p, diags[0].Summary)
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return "", nil
	}
	for _, b := range body.Blocks {
		if b.Type != "credentials" || len(b.Labels) != 1 || strings.ToLower(b.Labels[0]) != host {
			continue
		}
		attr, ok := b.Body.Attributes["token"]
		if !ok {
			return "", nil
		}
		v, diags := attr.Expr.Value(nil)
		if diags.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			return "", fmt.Errorf("CLI config %s:%d: the token of credentials %q must be a literal string", p, attr.SrcRange.Start.Line, b.Labels[0])
		}
		return v.AsString(), nil
	}
	return "", nil
}

// loginToken reads what `tofu login` stored for host.
func loginToken(p, host string) (string, error) {
	src, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("credentials file: %w", err)
	}
	return jsonToken(src, p, host)
}

func jsonToken(src []byte, p, host string) (string, error) {
	var doc struct {
		Credentials map[string]struct {
			Token string `json:"token"`
		} `json:"credentials"`
	}
	if err := json.Unmarshal(src, &doc); err != nil {
		return "", fmt.Errorf("%s: not valid JSON", p) // the decoder's message may quote the file
	}
	for h, c := range doc.Credentials {
		if strings.ToLower(h) == host {
			return c.Token, nil
		}
	}
	return "", nil
}

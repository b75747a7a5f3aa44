package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"knit.dev/knit/internal/procexec"
)

// ErrNoBinary means neither tofu nor terraform could be found.
var ErrNoBinary = errors.New("no OpenTofu or Terraform binary found: install one, put it on PATH, or pass --tf-binary (in this repository: make tools)")

// Binary is a located OpenTofu or Terraform executable and the CLI config
// file knit runs it with.
type Binary struct {
	Path string
	// CLIConfig is the TF_CLI_CONFIG_FILE knit sets for the tool, or "" to leave the tool's default.
	CLIConfig string
}

// Locate finds the tool: explicit (flag or KNIT_TF_BINARY) first, else tofu,
// then terraform on PATH. getenv is os.Getenv in production.
func Locate(explicit string, getenv func(string) string) (Binary, error) {
	if explicit == "" {
		explicit = getenv("KNIT_TF_BINARY")
	}
	var path string
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return Binary{}, fmt.Errorf("tf binary %q: %w", explicit, err)
		}
		path = p
	} else {
		for _, name := range []string{"tofu", "terraform"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			return Binary{}, ErrNoBinary
		}
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		path = abs
	}
	return Binary{Path: path, CLIConfig: cliConfig(path, getenv)}, nil
}

// cliConfig picks the CLI config file: KNIT_TF_CLI_CONFIG, else an existing
// TF_CLI_CONFIG_FILE, else a tofurc beside the binary's folder (the layout
// make tools writes: .tools/bin/tofu and .tools/tofurc). A TF_CLI_CONFIG_FILE
// naming a missing file is dropped, so the tool does not warn on every call.
func cliConfig(bin string, getenv func(string) string) string {
	if c := getenv("KNIT_TF_CLI_CONFIG"); c != "" {
		return c
	}
	if c := getenv("TF_CLI_CONFIG_FILE"); c != "" && fileExists(c) {
		return c
	}
	if c := filepath.Join(filepath.Dir(filepath.Dir(bin)), "tofurc"); fileExists(c) {
		return c
	}
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Env returns the environment the tool runs with: the caller's, minus
// TF_CLI_CONFIG_FILE, plus knit's own settings.
func (b Binary) Env(base []string) []string {
	out := make([]string, 0, len(base)+4)
	for _, kv := range base {
		if strings.HasPrefix(kv, "TF_CLI_CONFIG_FILE=") || strings.HasPrefix(kv, "TF_IN_AUTOMATION=") || strings.HasPrefix(kv, "TF_INPUT=") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "TF_IN_AUTOMATION=1", "TF_INPUT=0")
	if b.CLIConfig != "" {
		out = append(out, "TF_CLI_CONFIG_FILE="+b.CLIConfig)
	}
	return out
}

// Version asks the binary for its name and version, e.g. "OpenTofu v1.12.6".
func (b Binary) Version(ctx context.Context) (string, error) {
	// The text form, not -json: OpenTofu's JSON says "terraform_version"
	// like Terraform's, so only the text tells a tofu installed under
	// another name (a "terraform" symlink) from Terraform, and only
	// OpenTofu encrypts state.
	cmd := procexec.Command(ctx, b.Path, "version")
	cmd.Env = b.Env(procexec.ToolEnv(nil, nil))
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", b.Path, err)
	}
	m := versionLine.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s version: no \"OpenTofu vX.Y.Z\" or \"Terraform vX.Y.Z\" line in its output:\n%s", b.Path, out)
	}
	return fmt.Sprintf("%s v%s", m[1], m[2]), nil
}

// versionLine is the line of `tofu version` or `terraform version` naming
// the tool and its version.
var versionLine = regexp.MustCompile(`(?m)^(OpenTofu|Terraform) v(\S+)\s*$`)

// CachedVersion is Version, remembered in dir keyed by the binary's path,
// size and modification time, so that a run with nothing to do starts no
// tool process at all.
func (b Binary) CachedVersion(ctx context.Context, dir string) (string, error) {
	st, err := os.Stat(b.Path)
	if err != nil {
		return "", err
	}
	// "2": versions cached before Version read the text form may have
	// called a renamed tofu Terraform.
	key := fmt.Sprintf("2\x00%s\x00%d\x00%d", b.Path, st.Size(), st.ModTime().UnixNano())
	sum := sha256.Sum256([]byte(key))
	file := filepath.Join(dir, "tool-version-"+hex.EncodeToString(sum[:8]))
	if v, err := os.ReadFile(file); err == nil && len(v) > 0 {
		return string(v), nil
	}
	v, err := b.Version(ctx)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err == nil {
		tmp := file + ".tmp"
		if os.WriteFile(tmp, []byte(v), 0o600) == nil {
			_ = os.Rename(tmp, file)
		}
	}
	return v, nil
}

package terraform

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// sandboxCLIName is the CLI config a sandboxed tool reads, in its work dir.
const sandboxCLIName = "knit-cli.tfrc"

// credentialBlocks are the CLI config's blocks that hand the tool a
// registry token (or a program that finds one).
var credentialBlocks = map[string]bool{"credentials": true, "credentials_helper": true}

// sandboxCLIConfig writes into wd the CLI config a sandboxed tool gets:
// the server's (src, Binary.CLIConfig) without its credentials and
// credentials_helper blocks, so the tool installs providers as the
// server's does but holds no registry token (a nested module from a
// private registry fails in its init as knit's own fetch does, see
// fetchers.go). It refuses a CLI config that holds credentials and that
// other users may read: the sandbox's user could read the server's file
// itself. "" when the tool has no CLI config.
func sandboxCLIConfig(src, wd string) (string, error) {
	if src == "" {
		return "", nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("the CLI config for a sandboxed tool: %w", err)
	}
	clean, had, err := withoutCredentials(src, data)
	if err != nil {
		return "", err
	}
	if had {
		if st, err := os.Stat(src); err == nil && st.Mode().Perm()&0o044 != 0 {
			return "", fmt.Errorf("the CLI config %s holds registry credentials and other users may read it (mode %v), so a preview's code, run as another user, could read them: chmod 600 it", src, st.Mode().Perm())
		}
	}
	p := filepath.Join(wd, sandboxCLIName)
	if err := os.WriteFile(p, clean, 0o600); err != nil {
		return "", err
	}
	return p, nil
}

// withoutCredentials is a CLI config (HCL, or JSON for a .json file)
// without its credential blocks, and whether it had any.
func withoutCredentials(name string, data []byte) ([]byte, bool, error) {
	if strings.HasSuffix(name, ".json") {
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, false, fmt.Errorf("the CLI config %s: not valid JSON", name)
		}
		had := false
		for k := range credentialBlocks {
			if _, ok := doc[k]; ok {
				delete(doc, k)
				had = true
			}
		}
		out, err := json.Marshal(doc)
		return out, had, err
	}
	f, diags := hclsyntax.ParseConfig(data, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, false, fmt.Errorf("the CLI config %s: %s", name, diags[0].Summary)
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return data, false, nil
	}
	out, end := []byte{}, len(data)
	blocks := body.Blocks
	had := false
	for i := len(blocks) - 1; i >= 0; i-- { // cut from the end: offsets stay valid
		if !credentialBlocks[blocks[i].Type] {
			continue
		}
		r := blocks[i].Range()
		out = append(append([]byte{}, data[r.End.Byte:end]...), out...)
		end, had = r.Start.Byte, true
	}
	return append(append([]byte{}, data[:end]...), out...), had, nil
}

package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
)

// knit reads a module's configuration files itself, without the tool, for
// two decisions: whether knit may encrypt the component's state (not when
// the module declares a backend other than "local", or encryption of its
// own), and whether init must run again. Files are parsed with HCL, the
// tool's own syntax, so that a resource's nested block that happens to be
// called "encryption" or "backend" is not mistaken for the terraform
// block's. A file HCL cannot parse is judged by a conservative text check
// (the tool will report the syntax error anyway).

// fileConfig is what one configuration file contributes.
type fileConfig struct {
	// backend is the type of a backend the file's terraform blocks
	// declare ("cloud" for a cloud block); encryption is true for an
	// encryption block there.
	backend    string
	encryption bool
	// initParts are the lines of the file that init depends on: every
	// terraform and module block in full, each provider block's name, and
	// the provider each resource, data source and ephemeral resource
	// implies or names. A file that did not parse contributes its whole
	// content.
	initParts []string
	// staticVars is true when a terraform or module block refers to a
	// variable: OpenTofu then evaluates it early, during init.
	staticVars bool
}

// configCache remembers fileConfig by content hash and syntax (configKey).
type configCache struct {
	mu sync.Mutex
	m  map[string]*fileConfig
	// disk holds, per work dir, the keys its cache file holds (see
	// loadConfigs); a work dir not in it has not been read yet.
	disk map[string]map[string]bool
	// parsed counts the files parsed, for tests.
	parsed atomic.Int64
}

func (c *configCache) onDisk(wd, key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.disk[wd][key]
}

func (c *configCache) setDisk(wd string, keys map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disk == nil {
		c.disk = map[string]map[string]bool{}
	}
	c.disk[wd] = keys
}

func (c *configCache) get(key string) (*fileConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fc, ok := c.m[key]
	return fc, ok
}

func (c *configCache) put(key string, fc *fileConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*fileConfig{}
	}
	c.m[key] = fc
}

// fileConfig returns f's configuration, parsing it at most once per content.
func (r *Runner) fileConfig(rel string, f file) (*fileConfig, error) {
	key, err := r.configKey(rel, f)
	if err != nil {
		return nil, err
	}
	if fc, ok := r.configs.get(key); ok {
		return fc, nil
	}
	data, err := f.read()
	if err != nil {
		return nil, err
	}
	fc := parseConfig(rel, data)
	r.configs.parsed.Add(1)
	r.configs.put(key, fc)
	return fc, nil
}

// isJSONConfig and isConfig classify layout paths: module code the tool reads.
func isJSONConfig(rel string) bool {
	return strings.HasSuffix(rel, ".tf.json") || strings.HasSuffix(rel, ".tofu.json")
}

func isConfig(rel string) bool {
	return strings.HasSuffix(rel, ".tf") || strings.HasSuffix(rel, ".tofu") || isJSONConfig(rel)
}

// parseConfig reads one configuration file.
func parseConfig(name string, data []byte) *fileConfig {
	if isJSONConfig(name) {
		return parseJSONConfig(name, data)
	}
	f, diags := hclsyntax.ParseConfig(data, name, hcl.InitialPos)
	body, ok := f.Body.(*hclsyntax.Body)
	if diags.HasErrors() || !ok {
		return unparsedConfig(data)
	}
	fc := &fileConfig{}
	src := func(r hcl.Range) string { return normalized(r.SliceBytes(data)) }
	for _, b := range body.Blocks {
		switch b.Type {
		case "terraform":
			fc.initParts = append(fc.initParts, "terraform "+src(b.Range()))
			fc.staticVars = fc.staticVars || refersToVars(b.Range().SliceBytes(data))
			for _, inner := range b.Body.Blocks {
				switch {
				case inner.Type == "backend" && len(inner.Labels) == 1:
					fc.backend = inner.Labels[0]
				case inner.Type == "cloud":
					fc.backend = "cloud"
				case inner.Type == "encryption":
					fc.encryption = true
				}
			}
		case "module":
			fc.initParts = append(fc.initParts, "module "+src(b.Range()))
			fc.staticVars = fc.staticVars || refersToVars(b.Range().SliceBytes(data))
		case "provider":
			if len(b.Labels) > 0 {
				fc.initParts = append(fc.initParts, "provider "+b.Labels[0])
			}
		case "resource", "data", "ephemeral":
			fc.initParts = append(fc.initParts, resourceProvider(b, src)...)
		case "check":
			for _, inner := range b.Body.Blocks {
				if inner.Type == "data" {
					fc.initParts = append(fc.initParts, resourceProvider(inner, src)...)
				}
			}
		}
	}
	return fc
}

// resourceProvider names the provider a resource block needs: the one its
// type implies ("local" for local_file) and the one its provider argument names.
func resourceProvider(b *hclsyntax.Block, src func(hcl.Range) string) []string {
	var out []string
	if len(b.Labels) > 0 {
		implied, _, _ := strings.Cut(b.Labels[0], "_")
		out = append(out, "implies "+implied)
	}
	if a, ok := b.Body.Attributes["provider"]; ok {
		out = append(out, "names "+src(a.Expr.Range()))
	}
	return out
}

// jsonSchema finds the terraform blocks of a JSON configuration file, and
// their backend, cloud and encryption blocks.
var (
	jsonTop       = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}}
	jsonTerraform = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "backend", LabelNames: []string{"type"}}, {Type: "cloud"}, {Type: "encryption"},
	}}
)

// parseJSONConfig reads a JSON configuration file: backend and encryption
// from its terraform blocks; for init, the whole file counts (JSON
// configuration is rare and usually generated).
func parseJSONConfig(name string, data []byte) *fileConfig {
	f, diags := hcljson.Parse(data, name)
	if diags.HasErrors() {
		return unparsedConfig(data)
	}
	fc := &fileConfig{initParts: []string{"json " + string(data)}, staticVars: refersToVars(data)}
	top, _, diags := f.Body.PartialContent(jsonTop)
	if diags.HasErrors() {
		return unparsedConfig(data)
	}
	for _, tb := range top.Blocks {
		inner, _, diags := tb.Body.PartialContent(jsonTerraform)
		if diags.HasErrors() {
			return unparsedConfig(data)
		}
		for _, b := range inner.Blocks {
			switch b.Type {
			case "backend":
				fc.backend = b.Labels[0]
			case "cloud":
				fc.backend = "cloud"
			case "encryption":
				fc.encryption = true
			}
		}
	}
	return fc
}

var (
	textBackend    = regexp.MustCompile(`(?m)(^\s*backend\s+"([^"]*)"\s*\{|^\s*cloud\s*\{|"backend"\s*:|"cloud"\s*:)`)
	textEncryption = regexp.MustCompile(`(?m)(^\s*encryption\s*\{|"encryption"\s*:)`)
)

// unparsedConfig judges a file HCL could not parse by its text, erring
// towards "declares": knit then leaves state alone, and re-runs init
// whenever the file changes.
func unparsedConfig(data []byte) *fileConfig {
	fc := &fileConfig{initParts: []string{"file " + string(data)}, staticVars: true}
	if m := textBackend.FindSubmatch(data); m != nil {
		fc.backend = "unknown"
		if len(m[2]) > 0 {
			fc.backend = string(m[2])
		}
	}
	fc.encryption = textEncryption.Match(data)
	return fc
}

// normalized is HCL source as its tokens, without comments and line
// breaks: reformatting a block does not change what init reads.
func normalized(src []byte) string {
	toks, diags := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	if diags.HasErrors() {
		return string(src)
	}
	var b strings.Builder
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenComment, hclsyntax.TokenNewline, hclsyntax.TokenEOF:
			continue
		}
		b.Write(t.Bytes)
		b.WriteByte(' ')
	}
	return b.String()
}

var varRef = regexp.MustCompile(`\bvar\.`)

func refersToVars(text []byte) bool { return varRef.Match(text) }

// moduleSettings reads the backend and encryption the run folder's own
// configuration declares; knit's backend override does not count.
func (r *Runner) moduleSettings(l *layout) (backend string, encryption bool, err error) {
	for rel, f := range l.files {
		if path.Dir(rel) != l.sub || path.Base(rel) == backendFile || !isConfig(rel) {
			continue
		}
		fc, err := r.fileConfig(rel, f)
		if err != nil {
			return "", false, err
		}
		if fc.backend != "" {
			backend = fc.backend
		}
		encryption = encryption || fc.encryption
	}
	return backend, encryption, nil
}

// initDigest hashes what init depends on in the module's configuration
// files (anywhere in the module, nested modules included), independent of
// their order and of everything else in them: editing a resource's
// arguments or adding an output does not re-run init; a new provider, module
// call or backend setting does. When a terraform or module block refers to
// variables, the inputs count too (static evaluation), through inputs.
func (r *Runner) initDigest(l *layout, inputs func() (string, error)) (string, error) {
	seen := map[string]bool{}
	static := false
	for rel, f := range l.files {
		if !isConfig(rel) {
			continue
		}
		fc, err := r.fileConfig(rel, f)
		if err != nil {
			return "", err
		}
		for _, p := range fc.initParts {
			seen[path.Dir(rel)+"\x00"+p] = true
		}
		static = static || fc.staticVars
	}
	parts := make([]string, 0, len(seen))
	for p := range seen {
		parts = append(parts, p)
	}
	sort.Strings(parts)
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	if static {
		in, err := inputs()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "inputs %s\n", in)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

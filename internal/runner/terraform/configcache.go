package terraform

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
)

// configCacheFile, in a component's work dir, keeps what knit read from the
// module's configuration files (fileConfig) by content hash, so that a run
// of an unchanged module parses no HCL: parsing was the largest part of
// knit's own CPU per component. Entries are keyed by content, so a stale
// one is never wrong, only unused; the file is rewritten with the layout's
// entries whenever a file had to be parsed.
const configCacheFile = "config.cache.json"

// configCacheVersion names what parseConfig extracts. Change it whenever
// parseConfig, parseJSONConfig, unparsedConfig or normalized would give
// another answer for the same file: caches written under another version
// are ignored. TestTheConfigCacheVersionFollowsTheParser fails until it is.
const configCacheVersion = "knit-config-1"

type configCacheDoc struct {
	Version string                      `json:"version"`
	Files   map[string]configCacheEntry `json:"files"`
}

type configCacheEntry struct {
	Backend    string   `json:"backend,omitempty"`
	Encryption bool     `json:"encryption,omitempty"`
	InitParts  []string `json:"initParts,omitempty"`
	StaticVars bool     `json:"staticVars,omitempty"`
}

func (fc *fileConfig) entry() configCacheEntry {
	return configCacheEntry{Backend: fc.backend, Encryption: fc.encryption, InitParts: fc.initParts, StaticVars: fc.staticVars}
}

func (e configCacheEntry) config() *fileConfig {
	return &fileConfig{backend: e.Backend, encryption: e.Encryption, initParts: e.InitParts, staticVars: e.StaticVars}
}

// configKey is the in-memory and on-disk cache key of a file's fileConfig.
func (r *Runner) configKey(rel string, f file) (string, error) {
	sum, err := r.hashes.sum(f)
	if err != nil {
		return "", err
	}
	return sum + "|" + path.Ext(rel), nil
}

// loadConfigs reads the work dir's cache, once per process, into memory:
// moduleSettings and initDigest then parse only what it lacks.
func (r *Runner) loadConfigs(wd string) {
	r.configs.mu.Lock()
	_, done := r.configs.disk[wd]
	r.configs.mu.Unlock()
	if done {
		return
	}
	keys := map[string]bool{}
	var doc configCacheDoc
	if data, err := os.ReadFile(filepath.Join(wd, configCacheFile)); err == nil && json.Unmarshal(data, &doc) == nil && doc.Version == configCacheVersion {
		for key, e := range doc.Files {
			r.configs.put(key, e.config())
			keys[key] = true
		}
	}
	r.configs.setDisk(wd, keys)
}

// saveConfigs rewrites the work dir's cache with the fileConfig of every
// configuration file of l (knit's own included), unless it holds them all
// already. A cache that cannot be written only costs parsing next time.
func (r *Runner) saveConfigs(wd string, l *layout) error {
	out := configCacheDoc{Version: configCacheVersion, Files: map[string]configCacheEntry{}}
	stale := false
	for rel, f := range l.files {
		if !isConfig(rel) {
			continue
		}
		key, err := r.configKey(rel, f)
		if err != nil {
			return err
		}
		fc, err := r.fileConfig(rel, f)
		if err != nil {
			return err
		}
		stale = stale || !r.configs.onDisk(wd, key)
		out.Files[key] = fc.entry()
	}
	if !stale {
		return nil
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if writeFileAtomic(filepath.Join(wd, configCacheFile), data, 0o600) == nil {
		keys := map[string]bool{}
		for key := range out.Files {
			keys[key] = true
		}
		r.configs.setDisk(wd, keys)
	}
	return nil
}

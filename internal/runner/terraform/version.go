package terraform

import (
	"strings"
	"sync"

	"github.com/hashicorp/go-version"
)

// toolVersions remembers the tool's version, parsed once from
// Options.ToolVersion (which Binary.CachedVersion keeps on disk, so no run
// asks the tool for it again).
type toolVersions struct {
	once sync.Once
	v    *version.Version
}

// parsed returns the version in a ToolVersion string ("OpenTofu v1.12.6"),
// or nil if it has none.
func (t *toolVersions) parsed(toolVersion string) *version.Version {
	t.once.Do(func() {
		f := strings.Fields(toolVersion)
		if len(f) == 0 {
			return
		}
		if v, err := version.NewVersion(strings.TrimPrefix(f[len(f)-1], "v")); err == nil {
			t.v = v
		}
	})
	return t.v
}

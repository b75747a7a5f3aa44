package cli

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/procexec"
)

// previewSandbox is how knit serve runs the code of branches it previews
// (knit.yaml git.previewSandbox, --preview-uid …): see docs/security.md.
type previewSandbox struct {
	UID         int    `yaml:"uid"`
	GID         int    `yaml:"gid"`
	Dir         string `yaml:"dir"`
	CPU         string `yaml:"cpu"`
	Unsandboxed bool   `yaml:"unsandboxed"`
}

// nobody is the default sandbox user and group (Debian's nobody/nogroup).
const nobody = 65534

func (p *previewSandbox) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&p.UID, "preview-uid", nobody, "user the tools and script commands of previewed branches run as (not knit's; a dedicated one is best)")
	f.IntVar(&p.GID, "preview-gid", nobody, "group they run as")
	f.StringVar(&p.Dir, "preview-dir", filepath.Join(os.TempDir(), "knit-previews"), "folder of the previews' work dirs, outside the data dir")
	f.StringVar(&p.CPU, "preview-cpu", "5m", "CPU time each previewed tool process may use (RLIMIT_CPU)")
	f.BoolVar(&p.Unsandboxed, "preview-unsandboxed", false, "run previews' code as knit's own user, with knit's powers (only where every branch author is trusted: docs/security.md)")
}

// merge takes the config file's settings the command line left alone.
func (p *previewSandbox) merge(cmd *cobra.Command, file previewSandbox) {
	ch := cmd.Flags().Changed
	if !ch("preview-uid") && file.UID != 0 {
		p.UID = file.UID
	}
	if !ch("preview-gid") && file.GID != 0 {
		p.GID = file.GID
	}
	if !ch("preview-dir") && file.Dir != "" {
		p.Dir = file.Dir
	}
	if !ch("preview-cpu") && file.CPU != "" {
		p.CPU = file.CPU
	}
	if !ch("preview-unsandboxed") && file.Unsandboxed {
		p.Unsandboxed = true
	}
}

// policy is the previews' sandbox, checked: where it cannot be set up
// (knit is not root), previews run no code and say why, unless
// --preview-unsandboxed. With a sandbox, the data dir becomes 0700 so
// that the sandbox's user cannot enter it.
func (p previewSandbox) policy(dataDir string, log *slog.Logger) (knit.PreviewPolicy, error) {
	if p.Unsandboxed {
		log.Warn("previews run the code of unreviewed branches as knit's own user, with knit's powers (--preview-unsandboxed)")
		return knit.PreviewPolicy{Unsandboxed: true}, nil
	}
	cpu, err := time.ParseDuration(p.CPU)
	if err != nil || cpu < time.Second {
		return knit.PreviewPolicy{}, fmt.Errorf("--preview-cpu %q: want a duration of a second or more, such as 5m", p.CPU)
	}
	if p.UID < 0 || p.GID < 0 {
		return knit.PreviewPolicy{}, fmt.Errorf("--preview-uid %d --preview-gid %d: want a user and group other than knit's", p.UID, p.GID)
	}
	dir, err := filepath.Abs(p.Dir)
	if err != nil {
		return knit.PreviewPolicy{}, fmt.Errorf("--preview-dir: %w", err)
	}
	if rel, err := filepath.Rel(dataDir, dir); err == nil && filepath.IsLocal(rel) || dir == dataDir {
		return knit.PreviewPolicy{}, fmt.Errorf("--preview-dir %s is inside the data dir %s, which the sandbox's user must not enter: choose a folder outside it", dir, dataDir)
	}
	sb := &procexec.Sandbox{UID: uint32(p.UID), GID: uint32(p.GID), Dir: dir, CPU: cpu}
	if err := sb.Check(); err != nil {
		log.Warn("previews run no code: no sandbox", "err", err)
		return knit.PreviewPolicy{NoSandbox: err}, nil
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return knit.PreviewPolicy{}, fmt.Errorf("make the data dir %s private to knit's user for the previews' sandbox: %w", dataDir, err)
	}
	return knit.PreviewPolicy{Sandbox: sb}, nil
}

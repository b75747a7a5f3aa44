package terraform

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"
)

// toolVersions remembers the tool's version for tfexec. tfexec checks the
// version before most commands (init, show, output, …) against the flags it
// is about to pass, and asks the tool (`version -json`, one more process)
// once per *tfexec.Terraform, that is once per folder and operation. knit
// already knows the version (Options.ToolVersion, cached on disk by
// Binary.CachedVersion), so it hands it to tfexec instead.
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

// learnVersion makes tf know the tool's version: primed from what knit
// knows when it can be, otherwise asked of the tool as tfexec would.
func (r *Runner) learnVersion(ctx context.Context, tf *tfexec.Terraform) error {
	if v := r.versions.parsed(r.opts.ToolVersion); v != nil && primeVersion(tf, v) {
		return nil
	}
	_, _, err := tf.Version(ctx, false)
	return err
}

// primeVersion stores v as tf's cached tool version. tfexec has no setter
// for it, so the unexported field is set by reflection; it reports false,
// leaving tf alone, if the field is not there as expected (a tfexec
// upgrade; TestToolCommandLines then sees version processes again).
func primeVersion(tf *tfexec.Terraform, v *version.Version) bool {
	f := reflect.ValueOf(tf).Elem().FieldByName("execVersion")
	if !f.IsValid() || f.Type() != reflect.TypeOf(v) {
		return false
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(v))
	return true
}

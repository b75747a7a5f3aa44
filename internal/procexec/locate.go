package procexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Locate finds knit's companion executable name (knit-kube,
// knit-terragrunt): beside the running knit binary (where `make build`
// puts it), then on PATH. why, what runs in it, completes the error when
// it is in neither place.
func Locate(name, why string) (string, error) {
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is neither beside knit nor on PATH: %s (make build puts it in bin/)", name, why)
	}
	return p, nil
}

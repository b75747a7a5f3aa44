package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestZZDebug(t *testing.T) {
	files, _ := filepath.Glob(os.Getenv("DBG"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		env, ds := Parse(filepath.Base(f), filepath.Dir(f), data)
		fmt.Printf("=== %s env=%v\n%s\n", f, env != nil, ds.String())
	}
}
